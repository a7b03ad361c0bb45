package memory

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/bichat-go/bichat/domain"
)

// The clone functions return deep copies: no slice, map or pointer in the
// result is shared with the argument. Nil stays nil and empty stays empty.

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}

func clonePart(p domain.Part) domain.Part {
	if p.Reasoning != nil {
		r := *p.Reasoning
		r.Opaque = cloneRaw(r.Opaque)
		p.Reasoning = &r
	}
	if p.ToolCall != nil {
		c := *p.ToolCall
		c.Arguments = cloneRaw(c.Arguments)
		c.Opaque = cloneRaw(c.Opaque)
		p.ToolCall = &c
	}
	if p.ToolResult != nil {
		r := *p.ToolResult
		p.ToolResult = &r
	}
	if p.File != nil {
		f := *p.File
		p.File = &f
	}
	return p
}

func cloneParts(ps []domain.Part) []domain.Part {
	if ps == nil {
		return nil
	}
	out := make([]domain.Part, len(ps))
	for i, p := range ps {
		out[i] = clonePart(p)
	}
	return out
}

func cloneMetadata(md domain.MessageMetadata) domain.MessageMetadata {
	if md.ToolCalls != nil {
		calls := make([]domain.ToolCallRecord, len(md.ToolCalls))
		for i, c := range md.ToolCalls {
			c.ArtifactIDs = slices.Clone(c.ArtifactIDs)
			calls[i] = c
		}
		md.ToolCalls = calls
	}
	md.DatasetsUsed = slices.Clone(md.DatasetsUsed)
	if md.Error != nil {
		e := *md.Error
		md.Error = &e
	}
	return md
}

func cloneMessage(m *domain.Message) domain.Message {
	c := *m
	c.Parts = cloneParts(m.Parts)
	c.Metadata = cloneMetadata(m.Metadata)
	c.Citations = slices.Clone(m.Citations)
	c.Attachments = slices.Clone(m.Attachments)
	return c
}

func cloneCheckpoint(cp *domain.Checkpoint) domain.Checkpoint {
	c := *cp
	c.Data = cloneRaw(cp.Data)
	return c
}

func cloneArtifact(a *domain.Artifact) domain.Artifact {
	c := *a
	c.Metadata = maps.Clone(a.Metadata)
	return c
}
