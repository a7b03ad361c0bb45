package docs

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bichat-go/bichat/domain"
)

// MaxIDLength is the longest document id the index accepts, in bytes.
const MaxIDLength = 512

// Document is one knowledge-base entry: a policy page, a metric
// definition, a runbook. The index stores every field; Title, Content and
// Tags are searched.
type Document struct {
	// ID identifies the document within its scope: 1 to MaxIDLength bytes
	// of UTF-8 without control characters or surrounding spaces. The file
	// source uses the slash-separated path under its root, the SQL source
	// the id column. Adding a document with an existing id replaces it.
	ID      string `json:"id"`
	Title   string `json:"title"`
	Content string `json:"content"`
	// Tags are exact labels ("finance", "policy"). They are searched as
	// words and can filter a search (SearchOptions.Tags).
	Tags []string `json:"tags,omitempty"`
	// Metadata is free-form data the host wants back with a hit (owner,
	// modified time, a row's other columns). It is stored, not searched.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Source is where a reader can find the original: an http(s) URL (which
	// citations carry as their URL), a path under a source root, or a
	// table reference.
	Source string `json:"source,omitempty"`
}

// Validate reports a *domain.ValidationError when the id is malformed or
// the document has neither title nor content.
func (d Document) Validate() error {
	ve := &domain.ValidationError{}
	if err := ValidateID(d.ID); err != nil {
		ve.Fields = append(ve.Fields, domain.FieldErrors(err)...)
	}
	if strings.TrimSpace(d.Title) == "" && strings.TrimSpace(d.Content) == "" {
		ve.Add("document.content", "title and content are both empty")
	}
	if !utf8.ValidString(d.Title) || !utf8.ValidString(d.Content) {
		ve.Add("document.content", "title and content must be valid UTF-8")
	}
	for i, t := range d.Tags {
		if strings.TrimSpace(t) == "" || !utf8.ValidString(t) {
			ve.Add(fmt.Sprintf("document.tags[%d]", i), "tags must be non-empty UTF-8 text")
		}
	}
	return ve.Err()
}

// ValidateID reports a *domain.ValidationError when id is not a usable
// document id (see Document.ID).
func ValidateID(id string) error {
	switch {
	case id == "":
		return domain.Invalid("document.id", "is required")
	case len(id) > MaxIDLength:
		return domain.Invalid("document.id", fmt.Sprintf("is %d bytes long; the limit is %d", len(id), MaxIDLength))
	case !utf8.ValidString(id):
		return domain.Invalid("document.id", "is not valid UTF-8")
	case strings.TrimSpace(id) != id:
		return domain.Invalid("document.id", fmt.Sprintf("%q has leading or trailing spaces", id))
	case strings.ContainsFunc(id, unicode.IsControl):
		return domain.Invalid("document.id", fmt.Sprintf("%q contains control characters", id))
	}
	return nil
}

// URL returns Source when it is an absolute http or https URL, and the
// "url" metadata entry otherwise (empty when neither is set).
func (d Document) URL() string {
	if u, err := url.Parse(d.Source); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return d.Source
	}
	return d.Metadata["url"]
}
