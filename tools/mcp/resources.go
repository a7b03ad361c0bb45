package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DatasetURIPrefix starts the URI of every dataset resource; the rest is
// the path-escaped dataset name.
const DatasetURIPrefix = "bichat://datasets/"

// DatasetMIMEType is the media type of a dataset resource's content.
const DatasetMIMEType = "application/yaml"

// DatasetURI returns the resource URI of the dataset named name.
func DatasetURI(name string) string { return DatasetURIPrefix + url.PathEscape(name) }

// addResources exposes the datasets of the connection's scope: a template
// for reading any of them and a resources/list answered from the catalog
// at each request, so new datasets show up without reconnecting.
func (c *conn) addResources(srv *sdk.Server) {
	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "dataset",
		Title:       "Dataset definition",
		Description: "The YAML definition of a dataset you can query: source, columns with types and descriptions, relationships.",
		MIMEType:    DatasetMIMEType,
		URITemplate: DatasetURIPrefix + "{name}",
	}, c.readDataset)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			return c.listDatasets(ctx)
		}
	})
}

// listDatasets lists every dataset of the scope (in one page).
func (c *conn) listDatasets(ctx context.Context) (*sdk.ListResourcesResult, error) {
	scope := c.s.opts.Scope(c.principal)
	ds, err := c.s.opts.Catalog.List(ctx, scope)
	if err != nil {
		c.s.opts.Logger.Warn("mcp: list datasets", "scope", scope.String(), "error", err)
		return nil, fmt.Errorf("mcp: list datasets of %s: %w", scope.TenantID, err)
	}
	out := &sdk.ListResourcesResult{Resources: make([]*sdk.Resource, 0, len(ds))}
	for _, d := range ds {
		out.Resources = append(out.Resources, &sdk.Resource{
			URI:         DatasetURI(d.Name),
			Name:        d.Name,
			Description: d.Description,
			MIMEType:    DatasetMIMEType,
		})
	}
	return out, nil
}

// readDataset returns one dataset's YAML; a dataset outside the scope is
// not found, exactly like one that does not exist.
func (c *conn) readDataset(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, DatasetURIPrefix)
	if !ok || rest == "" {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	scope := c.s.opts.Scope(c.principal)
	ds, err := c.s.opts.Catalog.Datasets(ctx, scope, name)
	if err != nil {
		return nil, fmt.Errorf("mcp: read dataset %q: %w", name, err)
	}
	if len(ds) == 0 {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: uri, MIMEType: DatasetMIMEType, Text: ds[0].YAML(),
	}}}, nil
}
