// Package events moves domain events from Postgres to NATS JetStream and back, without
// losing or duplicating them.
//
// Publishing: Outbox.Add inserts the event in the caller's transaction, together with
// the state change it describes; a Relay publishes pending rows to JetStream with
// CloudEvents headers (binary mode) and Nats-Msg-Id = ce-id, and marks them sent. NATS
// being down delays events, never loses them; republishing is deduplicated by the
// stream's duplicate window (EnsureStream).
//
// Consuming: Consumer runs a durable pull consumer; each event's handler runs in a
// transaction that also records the event id in processed_events, so redeliveries are
// skipped and the handler's effects happen exactly once.
//
// Both need the tables of Migrations in the service's schema: pass Migrations() to
// pg.Open.
package events

// CloudEvents NATS protocol binding (binary content mode) header names.
const (
	HeaderSpecVersion = "ce-specversion"
	HeaderID          = "ce-id"
	HeaderSource      = "ce-source"
	HeaderType        = "ce-type"
	HeaderTime        = "ce-time"
	HeaderContentType = "content-type"

	// SpecVersion is the CloudEvents version the headers follow.
	SpecVersion = "1.0"
	// ContentTypeProtobuf marks payloads as binary protobuf messages.
	ContentTypeProtobuf = "application/protobuf"
)
