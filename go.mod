module github.com/webhookd/webhookd

go 1.26.8

require (
	github.com/PowerDNS/lmdb-go v1.9.3
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/kelseyhightower/envconfig v1.4.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
