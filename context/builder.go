package context

import (
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

// Builder assembles blocks fluently. Each method records an error instead
// of panicking; Blocks returns them all (errors.Join) and no blocks when
// any method failed. History positions are assigned in call order starting
// at 1, turn steps after the turn at 1, 2, ...; tool outputs likewise.
//
//	blocks, err := context.NewBuilder(nil).
//		Rules("You are a BI analyst.").
//		Tools(specs...).
//		Datasets(orders, customers).
//		History(msgs...).
//		Turn(context.TextTurn("Revenue by month?")).
//		Blocks()
type Builder struct {
	codecs  *Codecs
	sens    Sensitivity
	blocks  []Block
	errs    []error
	histPos int
	outPos  int
	stepPos int
}

// NewBuilder returns a Builder using codecs (nil: NewCodecs()).
func NewBuilder(codecs *Codecs) *Builder {
	if codecs == nil {
		codecs = NewCodecs()
	}
	return &Builder{codecs: codecs}
}

// Sensitivity sets the sensitivity of the blocks added after it (default
// internal).
func (b *Builder) Sensitivity(s Sensitivity) *Builder {
	if s > SensitivityRestricted {
		b.errs = append(b.errs, fmt.Errorf("context: Builder.Sensitivity: unknown level %d", s))
		return b
	}
	b.sens = s
	return b
}

// Add adds a block of any registered codec.
func (b *Builder) Add(kind Kind, codec string, payload any, opts ...BlockOption) *Builder {
	all := append([]BlockOption{WithSensitivity(b.sens)}, opts...)
	blk, err := b.codecs.NewBlock(kind, codec, payload, all...)
	if err != nil {
		b.errs = append(b.errs, err)
		return b
	}
	b.blocks = append(b.blocks, blk)
	return b
}

// Block adds blocks made elsewhere (e.g. a persisted summary).
func (b *Builder) Block(blocks ...Block) *Builder {
	for _, blk := range blocks {
		if !blk.valid() {
			b.errs = append(b.errs, fmt.Errorf("%w: Builder.Block got a block not made by a codec", ErrInvalidBlock))
			continue
		}
		b.blocks = append(b.blocks, blk)
	}
	return b
}

// Rules adds pinned system rules, one block per text.
func (b *Builder) Rules(texts ...string) *Builder {
	for _, t := range texts {
		b.Add(KindPinned, CodecRules, Rules{Text: t})
	}
	return b
}

// Tools adds the tool schemas (reference).
func (b *Builder) Tools(specs ...agents.ToolSpec) *Builder {
	for _, s := range specs {
		b.Add(KindReference, CodecToolSchema, ToolSchemaOf(s))
	}
	return b
}

// Datasets adds dataset definitions (reference), rendered as YAML.
func (b *Builder) Datasets(ds ...domain.Dataset) *Builder {
	for _, d := range ds {
		b.Add(KindReference, CodecDataset, d)
	}
	return b
}

// JoinHints adds join hints (reference).
func (b *Builder) JoinHints(rels ...domain.Relationship) *Builder {
	for _, r := range rels {
		b.Add(KindReference, CodecJoinHint, r)
	}
	return b
}

// Recipes adds recipes (memory).
func (b *Builder) Recipes(rs ...Recipe) *Builder {
	for _, r := range rs {
		b.Add(KindMemory, CodecRecipe, r)
	}
	return b
}

// KBHits adds knowledge-base hits (memory).
func (b *Builder) KBHits(hits ...KBHit) *Builder {
	for _, h := range hits {
		b.Add(KindMemory, CodecKBHit, h)
	}
	return b
}

// State adds the host's situation snapshot.
func (b *Builder) State(s State) *Builder { return b.Add(KindState, CodecState, s) }

// QueryResult adds a query result (tool output) at the next tool-output
// position.
func (b *Builder) QueryResult(t *tools.Table, took time.Duration) *Builder {
	if t == nil {
		b.errs = append(b.errs, errors.New("context: Builder.QueryResult: nil table"))
		return b
	}
	b.outPos++
	return b.Add(KindToolOutput, CodecQueryResult, QueryResultOf(t, took), AtPosition(b.outPos))
}

// History adds earlier messages, oldest first, at the next history
// positions.
func (b *Builder) History(msgs ...agents.Message) *Builder {
	for _, m := range msgs {
		b.histPos++
		b.Add(KindHistory, CodecMessage, MessageOf(m), AtPosition(b.histPos))
	}
	return b
}

// Turn adds the user's new message (position 0 of the turn).
func (b *Builder) Turn(t Turn) *Builder { return b.Add(KindTurn, CodecTurn, t) }

// Steps adds this run's messages after the turn (assistant tool calls,
// tool results), in order.
func (b *Builder) Steps(msgs ...agents.Message) *Builder {
	for _, m := range msgs {
		b.stepPos++
		b.Add(KindTurn, CodecStep, MessageOf(m), AtPosition(b.stepPos))
	}
	return b
}

// Err returns the errors recorded so far, joined.
func (b *Builder) Err() error { return errors.Join(b.errs...) }

// Blocks returns the blocks added, or the errors recorded.
func (b *Builder) Blocks() ([]Block, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	return append([]Block(nil), b.blocks...), nil
}
