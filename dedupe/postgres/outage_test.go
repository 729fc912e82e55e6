package postgres

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// freezeProxy forwards TCP connections to a Postgres server and can stop
// passing the server's replies on, as a hung server or a dropped network
// path does: the client's bytes still reach the server.
type freezeProxy struct {
	ln       net.Listener
	upstream string
	frozen   atomic.Bool // for connections made from now on
	// freezeOn, when set, freezes a connection's replies as soon as its
	// client sends bytes containing it; the bytes still reach the server.
	freezeOn atomic.Pointer[[]byte]
	// holdOn, when set, holds back client bytes containing it (and what
	// follows on that connection) until hold is closed: a server that
	// runs a statement long after its client sent it, and gave up.
	holdOn atomic.Pointer[[]byte]
	hold   chan struct{}

	mu    sync.Mutex
	conns []*proxyConn
}

type proxyConn struct {
	client, server net.Conn
	frozen         atomic.Bool
}

func newFreezeProxy(t *testing.T, upstream string) *freezeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &freezeProxy{ln: ln, upstream: upstream, hold: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.client.Close()
			c.server.Close()
		}
	})
	return p
}

func (p *freezeProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxyConn{client: client, server: server}
		c.frozen.Store(p.frozen.Load())
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := client.Read(buf)
				if pat := p.freezeOn.Load(); n > 0 && pat != nil && bytes.Contains(buf[:n], *pat) {
					c.frozen.Store(true)
				}
				if pat := p.holdOn.Load(); n > 0 && pat != nil && bytes.Contains(buf[:n], *pat) {
					<-p.hold
				}
				if n > 0 {
					if _, werr := server.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			server.Close()
		}()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && !c.frozen.Load() {
					if _, werr := client.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			client.Close()
		}()
	}
}

// freezeAll drops the replies on every connection, new ones included.
func (p *freezeProxy) freezeAll() {
	p.frozen.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.frozen.Store(true)
	}
}

// dsn is dsn with its host replaced by the proxy's address.
func (p *freezeProxy) dsn(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Host = p.ln.Addr().String()
	return u.String()
}

func proxiedPG(t *testing.T, opTimeout time.Duration) (*Store, *freezeProxy, *pgx.Conn) {
	dsn := testPostgresDSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	p := newFreezeProxy(t, net.JoinHostPort(u.Hostname(), port))
	schema := testSchema(t, dsn)
	s, err := Open(context.Background(), p.dsn(t, dsn), Options{
		Schema: schema, OpTimeout: opTimeout, Options: dedupe.Options{PruneInterval: -1},
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(context.Background(), `SET search_path = `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	return s, p, conn
}

// A Postgres that stops answering costs each operation OpTimeout, not a
// hang: Claim answers ErrUnavailable (503) about that soon.
func TestPostgresHungServerAnswersUnavailable(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	s, p, _ := proxiedPG(t, opTimeout)
	ctx := context.Background()
	_, _, err := s.Claim(ctx, "stripe:evt_before", "fp", nil)
	require.NoError(t, err)

	p.freezeAll()
	for _, key := range []string{"stripe:evt_during", "stripe:evt_during2"} {
		start := time.Now()
		_, _, err = s.Claim(ctx, key, "fp", nil)
		took := time.Since(start)
		require.ErrorIs(t, err, dedupe.ErrUnavailable)
		require.NotContains(t, err.Error(), "127.0.0.1")
		// The claim is bounded by OpTimeout, its clean-up runs in the
		// background; the bound is generous for a loaded machine.
		require.Less(t, took, 20*opTimeout, "Claim took %v", took)
	}
	require.ErrorIs(t, s.Ping(ctx), dedupe.ErrUnavailable)
}

// A claim whose insert committed on the server but whose reply was lost is
// removed again, so the key does not answer 409 for a lease with nobody
// forwarding it.
func TestPostgresClaimWithLostReplyIsRemoved(t *testing.T) {
	// The clean-up's DELETE runs under the same OpTimeout on a fresh
	// connection: 300ms was seen to run out on a loaded 2-core machine.
	s, p, admin := proxiedPG(t, time.Second)
	ctx := context.Background()
	// Only the claim's insert sends the fingerprint: its reply is lost,
	// after the server committed it.
	pat := []byte("fp-lost-reply")
	p.freezeOn.Store(&pat)
	_, _, err := s.Claim(ctx, "stripe:evt_lost", "fp-lost-reply", nil)
	require.ErrorIs(t, err, dedupe.ErrUnavailable)
	// The clean-up runs in the background, after the claim's answer.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM `+Table+` WHERE key = 'stripe:evt_lost'`).Scan(&n))
		return n == 0
	}, 5*time.Second, 20*time.Millisecond, "the claim recorded without an answer was removed")

	// The provider's retry is forwarded now, not refused as in flight.
	p.freezeOn.Store(nil)
	_, rec, err := s.Claim(ctx, "stripe:evt_lost", "fp-lost-reply", nil)
	require.NoError(t, err)
	require.Nil(t, rec)
}

// TestPostgresClaimRunLateIsRemoved: a claim the server runs only after
// its caller has given up and the clean-up's first delete has run (a
// stalled server runs what its connections had buffered when it wakes up)
// is removed by the clean-up's second delete, so the key does not answer
// 409 for a lease with nobody forwarding it.
func TestPostgresClaimRunLateIsRemoved(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	s, p, admin := proxiedPG(t, opTimeout)
	ctx := context.Background()
	pat := []byte("fp-run-late")
	p.holdOn.Store(&pat)
	_, _, err := s.Claim(ctx, "stripe:evt_late", "fp-run-late", nil)
	require.ErrorIs(t, err, dedupe.ErrUnavailable)
	count := func() int {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM `+Table+` WHERE key = 'stripe:evt_late'`).Scan(&n))
		return n
	}
	// The first delete has found nothing; now the server runs the claim.
	require.Eventually(t, func() bool { return s.abandonsDeleted.Load() > 0 }, 5*time.Second, 10*time.Millisecond)
	close(p.hold)
	require.Eventually(t, func() bool { return count() == 1 }, 5*time.Second, 10*time.Millisecond, "the claim ran late")
	require.Eventually(t, func() bool { return count() == 0 }, 5*time.Second, 10*time.Millisecond,
		"the claim run late was removed")
}
