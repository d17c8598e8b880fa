package controller

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EmbeddedConfig is the controller's own etcd member (the default: one
// process, nothing else to run).
type EmbeddedConfig struct {
	Dir        string // data directory (the member's WAL and snapshots)
	ClientURL  string // where clients (the agents) reach it, e.g. http://127.0.0.1:2379
	PeerURL    string // its peer URL (one member: nobody connects)
	Name       string // member name
	QuotaBytes int64  // backend quota; 0: 8 GiB
	Quiet      bool   // no etcd log at all (tests)
}

// Limits the desired state needs beyond etcd's defaults: one node's
// configuration with 64K subscribers is about 8 MiB of JSON in one value
// (etcd's default request limit is 1.5 MiB), and a change may touch up to
// 1024 nodes in one transaction (default 128 operations). An external
// cluster needs the same (--max-request-bytes, --max-txn-ops).
const (
	MaxRequestBytes = 64 << 20
	MaxTxnOps       = 2048
)

// StartEmbedded starts a one-member etcd and waits until it serves.
func StartEmbedded(c EmbeddedConfig) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = c.Dir
	cfg.Name = c.Name
	if cfg.Name == "" {
		cfg.Name = "edgeplane-controller"
	}
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL %q: %w", c.ClientURL, err)
	}
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer URL %q: %w", c.PeerURL, err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.MaxRequestBytes = MaxRequestBytes
	cfg.MaxTxnOps = MaxTxnOps
	cfg.QuotaBackendBytes = c.QuotaBytes
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = 8 << 30
	}
	cfg.LogLevel = "warn"
	if c.Quiet {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	os.Chmod(c.Dir, 0o700) // etcd warns about anything wider
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		slog.Info("embedded etcd ready", "client", cu.String(), "dir", c.Dir)
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after 60 s")
	}
}
