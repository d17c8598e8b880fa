module edgeplane/lab/subemu

go 1.26.0

require (
	github.com/gopacket/gopacket v1.7.7
	golang.org/x/sys v0.48.0
)
