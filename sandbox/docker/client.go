package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// client speaks the Docker Engine API over the unix socket.
type client struct {
	http    *http.Client
	version string // negotiated API version, e.g. "1.41"
}

// maxAPIVersion is the newest API version this adapter was written for;
// older engines (down to minAPIVersion) are spoken to in their version.
const (
	maxAPIVersion = "1.43"
	minAPIVersion = "1.25"
)

func newClient(ctx context.Context, socket string) (*client, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	c := &client{http: &http.Client{Transport: tr}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker: engine not reachable at %s: %w", socket, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("docker: ping: %s", resp.Status)
	}
	server := resp.Header.Get("Api-Version")
	if server == "" {
		return nil, fmt.Errorf("docker: ping did not report an API version")
	}
	c.version = maxAPIVersion
	if versionLess(server, maxAPIVersion) {
		c.version = server
	}
	if versionLess(c.version, minAPIVersion) {
		return nil, fmt.Errorf("docker: engine API %s is older than the %s this adapter needs", server, minAPIVersion)
	}
	return c, nil
}

func versionLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	for i := 0; i < 2; i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// apiError is a non-2xx answer of the engine.
type apiError struct {
	Op     string
	Status int
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("docker: %s: %d %s", e.Op, e.Status, e.Msg)
}

// do sends a request; body may be nil, an io.Reader (sent as is with
// ctype) or a value encoded as JSON. The caller closes the response body.
func (c *client) do(ctx context.Context, op, method, path string, q url.Values, body any, ctype string) (*http.Response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(j)
		ctype = "application/json"
	}
	u := "http://docker/v" + c.version + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker: %s: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var m struct{ Message string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(b))
		}
		return nil, &apiError{Op: op, Status: resp.StatusCode, Msg: m.Message}
	}
	return resp, nil
}

// call is do for requests whose answer is JSON (decoded into out, when
// not nil) or empty.
func (c *client) call(ctx context.Context, op, method, path string, q url.Values, body, out any) error {
	resp, err := c.do(ctx, op, method, path, q, body, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil {
		return json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(out)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}

// demux reads Docker's multiplexed stream format: frames with an 8-byte
// header (stream type: 1 stdout, 2 stderr; 3 bytes zero; big-endian
// uint32 size) followed by the payload.
type demux struct {
	r   io.Reader
	hdr [8]byte
}

// next returns the next frame's stream and payload; max bounds a frame.
func (d *demux) next(max int) (stream byte, payload []byte, err error) {
	if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(d.hdr[4:]))
	if n > max {
		return 0, nil, fmt.Errorf("docker: log frame of %d bytes", n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(d.r, payload); err != nil {
		return 0, nil, err
	}
	return d.hdr[0], payload, nil
}
