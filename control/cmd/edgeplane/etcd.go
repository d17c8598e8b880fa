package main

import (
	"crypto/tls"
	"flag"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"edgeplane/control/internal/controller"
)

// etcdFlags are the flags of an etcd client (the controller with an
// external cluster, the node agent).
type etcdFlags struct {
	endpoints, cacert, cert, key string
}

func (e *etcdFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&e.endpoints, "etcd-endpoints", "", what)
	fs.StringVar(&e.cacert, "etcd-cacert", "", "CA certificate (PEM) of the etcd members' TLS certificates")
	fs.StringVar(&e.cert, "etcd-cert", "", "client certificate (PEM) for etcd's client TLS authentication")
	fs.StringVar(&e.key, "etcd-key", "", "its private key")
}

func (e *etcdFlags) client() (*clientv3.Client, error) {
	var tlsConf *tls.Config
	if e.cacert != "" || e.cert != "" {
		info := transport.TLSInfo{TrustedCAFile: e.cacert, CertFile: e.cert, KeyFile: e.key}
		var err error
		if tlsConf, err = info.ClientConfig(); err != nil {
			return nil, err
		}
	}
	return clientv3.New(clientv3.Config{
		Endpoints:          strings.Split(e.endpoints, ","),
		DialTimeout:        5 * time.Second,
		DialKeepAliveTime:  10 * time.Second,
		TLS:                tlsConf,
		MaxCallSendMsgSize: controller.MaxRequestBytes,
	})
}
