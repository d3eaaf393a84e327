/*
 * pfwire.h -- the common packets of --perfetto, assembled around a
 * TrackEvent that protobuf-c packed once (pfwire.c; perfetto.c caches the
 * events).  protobuf-c packs a message field by field through its
 * descriptor: per slice, twice, that was half of a --perfetto decode.
 */
#ifndef FT_DECODER_PFWIRE_H
#define FT_DECODER_PFWIRE_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the generated descriptors (perfetto_subset.proto) have the fields
 * pfw_packet writes, with the types it writes them as; else 0, and every
 * packet goes through protobuf-c */
int pfw_init(void);

/* room pfw_packet needs beyond the event's bytes */
#define PFW_ROOM 64
/* an event's bytes are read PFW_EVENT_SLACK at a time: ev must be readable
 * that far even when the event is shorter */
#define PFW_EVENT_SLACK 32

/* Trace.packet (length-delimited) holding a TracePacket with timestamp,
 * trusted_packet_sequence_id, track_event = the packed TrackEvent ev[0..n)
 * and sequence_flags, in the order protobuf-c writes them (by field
 * number): the bytes protobuf-c would write for that packet.  Returns the
 * number of bytes written at p (room: PFW_ROOM + n). */
size_t pfw_packet(uint8_t *p, uint64_t ts, uint32_t seq, uint32_t flags, const uint8_t *ev, size_t n);

/* v as a varint at p; returns its length (at most 10) */
size_t pfw_varint(uint8_t *p, uint64_t v);

#endif
