package docs_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/bichat-go/bichat/kb/docs"
)

// The synthetic corpus: realistic knowledge-base prose for a BI tool.
// Words are drawn from a Zipf distribution over a vocabulary whose head is
// real business English and whose long tail is made-up product, team and
// system names, so the term dictionary grows like a real corpus's does.

var headWords = strings.Fields(`
the of and to in for is on that by this with as are be at from or an it
revenue order orders customer customers invoice invoices payment payments refund refunds
margin gross net profit cost costs price pricing discount discounts tax taxes currency
region regions country market segment channel partner partners supplier suppliers
product products category categories inventory stock warehouse shipment shipments
delivery deliveries return returns churn retention cohort cohorts subscription renewal
account accounts ledger journal balance budget forecast forecasts target quota pipeline
lead leads opportunity opportunities deal deals quarter quarterly month monthly year
annual fiscal calendar week weekly daily report reports dashboard dashboards metric
metrics definition definitions table tables column columns view views query queries
schema database warehouse data dataset datasets source sources field fields join joins
filter filters aggregate total totals average median count sum ratio rate growth
policy policies process procedure approval approvals owner owners team teams finance
sales marketing operations support engineering compliance audit security privacy access
employee employees headcount payroll salary contractor vendor vendors contract contracts
recognition recognise recognised booked billing billed collected outstanding overdue
exchange conversion adjusted reconciled reconciliation close closing period periods
campaign campaigns attribution conversion funnel session sessions visitor visitors
active inactive new existing enterprise smallbusiness midmarket consumer wholesale retail
north south east west europe asia america africa pacific emea apac latam
must should may when where which each every only before after during until
calculate calculated excludes includes excluding including based using per
`)

var syllables = strings.Fields(`ka lo mi ne ru sa ti vo ze bar cor den fal gan hel jor kin lum mar nor pel qui ros sul tor ven wex yal zor ath bri cla dro fen gri hol ist jun kro`)

type corpus struct {
	vocab []string
	zipf  *rand.Zipf
	rng   *rand.Rand
}

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := append([]string(nil), headWords...)
	seen := map[string]bool{}
	for _, w := range vocab {
		seen[w] = true
	}
	for len(vocab) < 30000 {
		n := 2 + rng.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &corpus{vocab: vocab, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1)), rng: rng}
}

func (c *corpus) word() string { return c.vocab[c.zipf.Uint64()] }

func (c *corpus) sentence(words int) string {
	ws := make([]string, words)
	for i := range ws {
		ws[i] = c.word()
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

func (c *corpus) document(i int) docs.Document {
	title := make([]string, 3+c.rng.IntN(5))
	for k := range title {
		// Titles favour content words: skip the stop-word head.
		title[k] = c.vocab[20+c.rng.IntN(400)]
	}
	var content strings.Builder
	paragraphs := 1 + c.rng.IntN(3)
	for p := range paragraphs {
		if p > 0 {
			content.WriteString("\n\n")
		}
		for s := range 2 + c.rng.IntN(4) {
			if s > 0 {
				content.WriteByte(' ')
			}
			content.WriteString(c.sentence(6 + c.rng.IntN(14)))
		}
	}
	return docs.Document{
		ID:       fmt.Sprintf("kb/%03d/%06d.md", i%997, i),
		Title:    strings.Join(title, " "),
		Content:  content.String(),
		Tags:     []string{[]string{"finance", "sales", "ops", "policy", "metrics"}[i%5]},
		Metadata: map[string]string{"owner": fmt.Sprintf("team-%d", i%40)},
		Source:   fmt.Sprintf("https://wiki.example.com/kb/%06d", i),
	}
}

// queries returns n search queries: one to three content words of middle
// frequency, a fifth of them with a typo.
func (c *corpus) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		k := 1 + c.rng.IntN(3)
		ws := make([]string, k)
		for j := range ws {
			ws[j] = c.vocab[20+c.rng.IntN(2000)]
		}
		if i%5 == 0 {
			w := []byte(ws[0])
			if len(w) > 4 {
				w[2] = 'x'
			}
			ws[0] = string(w)
		}
		out[i] = strings.Join(ws, " ")
	}
	return out
}
