"""Who may do what: authentication (SASL, TLS) and authorization (Kafka's ACLs)."""
