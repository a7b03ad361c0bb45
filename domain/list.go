package domain

import "strings"

// SortField selects the order of a session listing.
type SortField string

// Sort fields.
const (
	SortUpdated SortField = "updated"
	SortCreated SortField = "created"
	SortTitle   SortField = "title"
)

// SortOrder is ascending or descending.
type SortOrder string

// Sort orders.
const (
	Desc SortOrder = "desc"
	Asc  SortOrder = "asc"
)

// Paging defaults and limits.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// ListOptions pages, filters and sorts a session listing. The zero value
// lists the first page of 20, most recently updated first.
type ListOptions struct {
	// Page is 1-based; 0 means 1.
	Page int `json:"page,omitempty"`
	// PageSize is 1 to 100; 0 means 20.
	PageSize int `json:"page_size,omitempty"`
	// Search keeps sessions whose title contains it, case-insensitively.
	Search string `json:"search,omitempty"`
	// Sort defaults to SortUpdated.
	Sort SortField `json:"sort,omitempty"`
	// Order defaults to Desc.
	Order SortOrder `json:"order,omitempty"`
}

// Normalize fills defaults and validates. It returns the options to use or
// a *ValidationError naming the bad fields.
func (o ListOptions) Normalize() (ListOptions, error) {
	var ve ValidationError
	if o.Page == 0 {
		o.Page = 1
	}
	if o.Page < 0 {
		ve.Add("page", "must be 1 or greater")
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.PageSize < 0 || o.PageSize > MaxPageSize {
		ve.Add("page_size", "must be between 1 and 100")
	}
	if o.Sort == "" {
		o.Sort = SortUpdated
	}
	switch o.Sort {
	case SortUpdated, SortCreated, SortTitle:
	default:
		ve.Add("sort", `must be "updated", "created" or "title"`)
	}
	if o.Order == "" {
		o.Order = Desc
	}
	if o.Order != Asc && o.Order != Desc {
		ve.Add("order", `must be "asc" or "desc"`)
	}
	o.Search = strings.TrimSpace(o.Search)
	if len(o.Search) > MaxTitleLen*4 {
		ve.Add("search", "is too long")
	}
	return o, ve.Err()
}

// Page is one page of a listing.
type Page[T any] struct {
	Items []T `json:"items"`
	// Total counts the matching items on all pages.
	Total      int `json:"total"`
	Page       int `json:"page"`
	PageSize   int `json:"page_size"`
	TotalPages int `json:"total_pages"`
}

// NewPage slices all (already filtered and sorted) into the page that opts
// selects. opts must be normalized.
func NewPage[T any](all []T, opts ListOptions) Page[T] {
	p := Page[T]{Total: len(all), Page: opts.Page, PageSize: opts.PageSize}
	if opts.PageSize > 0 {
		p.TotalPages = (len(all) + opts.PageSize - 1) / opts.PageSize
	}
	// Comparing the page with TotalPages, rather than the offset with
	// len(all), keeps a huge Page from overflowing the offset.
	if opts.Page >= 1 && opts.Page <= p.TotalPages {
		start := (opts.Page - 1) * opts.PageSize
		end := min(start+opts.PageSize, len(all))
		p.Items = append(make([]T, 0, end-start), all[start:end]...)
	} else {
		p.Items = []T{}
	}
	return p
}

// MessageListOptions selects messages of a session in chronological order.
type MessageListOptions struct {
	// Limit keeps the most recent Limit messages; 0 means all.
	Limit int
	// Before keeps messages created before the message with this id.
	Before string
}
