package postgres

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// policyFile is the reviewed allowlist of functions, operators and cast
// target types (policy.txt next to this file); see its header for the
// format.
//
//go:embed policy.txt
var policyFile string

// rule is one line of policy.txt.
type rule struct {
	allow  bool
	family string
	reason string // denied entries only
}

// builtinPolicy is policy.txt parsed.
type builtinPolicy struct {
	funcs map[string]rule         // function name -> rule (any number of arguments)
	arity map[string]map[int]rule // function name -> argument count -> rule
	ops   map[string]rule
	types map[string]rule
}

// builtins is the parsed policy.txt; a malformed file is a build defect
// that TestPolicyFileParses reports, and panics at start-up.
var builtins = mustParsePolicy(policyFile)

func mustParsePolicy(text string) *builtinPolicy {
	p, err := parsePolicy(text)
	if err != nil {
		panic(err)
	}
	return p
}

// parsePolicy reads the policy file format: sections [functions],
// [operators] and [types], and lines "allow NAME FAMILY" or
// "deny NAME FAMILY: REASON".
func parsePolicy(text string) (*builtinPolicy, error) {
	p := &builtinPolicy{funcs: map[string]rule{}, arity: map[string]map[int]rule{}, ops: map[string]rule{}, types: map[string]rule{}}
	var section map[string]rule
	sectionName := ""
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if j := strings.Index(line, "#"); j == 0 || j > 0 && line[j-1] == ' ' && sectionName != "operators" {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sectionName = line[1 : len(line)-1]
			switch sectionName {
			case "functions":
				section = p.funcs
			case "operators":
				section = p.ops
			case "types":
				section = p.types
			default:
				return nil, fmt.Errorf("policy.txt line %d: unknown section %s", n, line)
			}
			continue
		}
		if section == nil {
			return nil, fmt.Errorf("policy.txt line %d: entry before the first section", n)
		}
		verdict, rest, _ := strings.Cut(line, " ")
		name, rest, _ := strings.Cut(strings.TrimSpace(rest), " ")
		rest = strings.TrimSpace(rest)
		var r rule
		switch verdict {
		case "allow":
			if rest == "" || strings.ContainsAny(rest, " :") {
				return nil, fmt.Errorf("policy.txt line %d: want \"allow NAME FAMILY\", got %q", n, line)
			}
			r = rule{allow: true, family: rest}
		case "deny":
			fam, reason, ok := strings.Cut(rest, ":")
			if !ok || strings.TrimSpace(reason) == "" || fam == "" || strings.Contains(fam, " ") {
				return nil, fmt.Errorf("policy.txt line %d: want \"deny NAME FAMILY: REASON\", got %q", n, line)
			}
			r = rule{family: fam, reason: strings.TrimSpace(reason)}
		default:
			return nil, fmt.Errorf("policy.txt line %d: want allow or deny, got %q", n, line)
		}
		if sectionName != "operators" {
			// Lookups fold case (a quoted "PG_SLEEP" is still refused);
			// the few mixed-case catalog names (RI_FKey_*) are denied.
			name = strings.ToLower(name)
		}
		if base, k, ok := strings.Cut(name, "/"); ok && sectionName == "functions" {
			nargs, err := strconv.Atoi(k)
			if err != nil || nargs < 0 {
				return nil, fmt.Errorf("policy.txt line %d: bad argument count in %q", n, name)
			}
			if _, dup := p.funcs[base]; dup {
				return nil, fmt.Errorf("policy.txt line %d: %s has both a plain and a per-argument-count entry", n, base)
			}
			if p.arity[base] == nil {
				p.arity[base] = map[int]rule{}
			}
			if _, dup := p.arity[base][nargs]; dup {
				return nil, fmt.Errorf("policy.txt line %d: %s listed twice", n, name)
			}
			p.arity[base][nargs] = r
			continue
		}
		if _, dup := section[name]; dup {
			return nil, fmt.Errorf("policy.txt line %d: %s listed twice", n, name)
		}
		if _, dup := p.arity[name]; dup && sectionName == "functions" {
			return nil, fmt.Errorf("policy.txt line %d: %s has both a plain and a per-argument-count entry", n, name)
		}
		section[name] = r
	}
	return p, nil
}

// describe renders a denied rule for an error message.
func (r rule) describe() string {
	if r.reason == "" {
		return r.family
	}
	return r.family + ": " + r.reason
}
