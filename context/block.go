package context

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bichat-go/bichat/internal/canonjson"
)

// Block is one content-addressed piece of context. Make blocks with
// Codecs.NewBlock, NewBlock or a Builder: they validate and canonicalize the
// payload and compute the hash. A Block is an immutable value; copying it is
// cheap.
type Block struct {
	// Kind says where the block goes and how it is budgeted.
	Kind Kind
	// Codec and Version name the codec that validated the payload and
	// renders it.
	Codec   string
	Version int
	// Position orders blocks of chronological kinds (history, tool output,
	// turn); it is 0 for the others, which are ordered by hash.
	Position int
	// Sensitivity is the block's classification (never zero in a block
	// made by a codec).
	Sensitivity Sensitivity
	// Payload is the canonicalized payload, of the codec's payload type.
	Payload any
	// Hash is the SHA-256 of kind, sensitivity, codec id and version,
	// position and the canonical JSON of the payload; see HashInput.
	Hash [32]byte

	canon []byte
	text  string
	codec Codec
}

// HashHex returns the hash in lowercase hexadecimal.
func (b *Block) HashHex() string { return hex.EncodeToString(b.Hash[:]) }

// Text returns what the codec renders for the model: the text the block's
// tokens are counted on, and the content of system-prompt sections.
func (b *Block) Text() string { return b.text }

// CanonicalJSON returns the canonical JSON of the payload (do not modify).
func (b *Block) CanonicalJSON() []byte { return b.canon }

// CodecImpl returns the codec that made the block (nil for a zero Block).
func (b *Block) CodecImpl() Codec { return b.codec }

// String describes the block for logs: kind, codec, position and hash
// prefix.
func (b Block) String() string {
	return fmt.Sprintf("%s/%s@%d#%s", b.Kind, b.Codec, b.Position, b.HashHex()[:12])
}

func (b *Block) valid() bool { return b.codec != nil && b.Hash != [32]byte{} }

// hashDomain separates block hashes from any other use of SHA-256.
const hashDomain = "bichat/context.Block/v1"

// HashInput returns the exact bytes a block's hash is computed over: the
// domain string, then kind name, sensitivity name, codec id, codec version,
// position and canonical payload JSON, each preceded by its length as an
// unsigned varint, so no two different field lists give the same input.
func HashInput(kind Kind, sens Sensitivity, codec string, version, position int, canonical []byte) []byte {
	fields := [...]string{hashDomain, kind.String(), sens.normalize().String(), codec,
		strconv.Itoa(version), strconv.Itoa(position)}
	n := len(canonical) + 6*binary.MaxVarintLen64
	for _, f := range fields {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	for _, f := range fields {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(canonical)))
	return append(buf, canonical...)
}

// BlockOption sets optional fields of a new block.
type BlockOption func(*blockOptions)

type blockOptions struct {
	position    int
	sensitivity Sensitivity
}

// AtPosition sets the block's Position (chronological kinds).
func AtPosition(n int) BlockOption { return func(o *blockOptions) { o.position = n } }

// WithSensitivity sets the block's Sensitivity (default internal).
func WithSensitivity(s Sensitivity) BlockOption { return func(o *blockOptions) { o.sensitivity = s } }

// ErrInvalidBlock reports a block that cannot be made or used: unknown kind
// or codec, a payload the codec rejects, or a Block not made by a codec.
var ErrInvalidBlock = errors.New("context: invalid block")

// NewBlock makes a block of kind with payload validated, canonicalized and
// rendered by codec.
func NewBlock(codec Codec, kind Kind, payload any, opts ...BlockOption) (Block, error) {
	var o blockOptions
	for _, f := range opts {
		f(&o)
	}
	if codec == nil {
		return Block{}, fmt.Errorf("%w: nil codec", ErrInvalidBlock)
	}
	if !kind.Valid() {
		return Block{}, fmt.Errorf("%w: %s", ErrInvalidBlock, kind)
	}
	if o.sensitivity > SensitivityRestricted {
		return Block{}, fmt.Errorf("%w: %s", ErrInvalidBlock, o.sensitivity)
	}
	if o.position < 0 {
		return Block{}, fmt.Errorf("%w: negative position %d", ErrInvalidBlock, o.position)
	}
	if !kind.Ordered() {
		o.position = 0
	}
	p, err := codec.Canonicalize(payload)
	if err != nil {
		return Block{}, fmt.Errorf("%w: %s block (codec %s): %w", ErrInvalidBlock, kind, codec.ID(), err)
	}
	canon, err := canonjson.Marshal(p)
	if err != nil {
		return Block{}, fmt.Errorf("%w: %s block (codec %s): %w", ErrInvalidBlock, kind, codec.ID(), err)
	}
	text, err := codec.Render(p)
	if err != nil {
		return Block{}, fmt.Errorf("%w: render %s block (codec %s): %w", ErrInvalidBlock, kind, codec.ID(), err)
	}
	b := Block{Kind: kind, Codec: codec.ID(), Version: codec.Version(), Position: o.position,
		Sensitivity: o.sensitivity.normalize(), Payload: p, canon: canon, text: strings.TrimSpace(text), codec: codec}
	b.Hash = sha256.Sum256(HashInput(b.Kind, b.Sensitivity, b.Codec, b.Version, b.Position, canon))
	return b, nil
}
