// The built-in snap and winpay specs verify Winpay's 1023-bit sandbox key
// when loaded, which Go allows only under this setting (cmd/webhookd sets
// it for its binary; docs/provider-specs.md, "Weak keys").
//
//go:debug rsa1024min=0
package routing_test
