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

/* v as a varint at p; returns its length (at most 10) */
size_t pfw_varint(uint8_t *p, uint64_t v);

/* pfw_packet's straight path, set by pfw_init where every key is one byte
 * and the fields' order is the one below (simple: 1) */
struct pfw_keys {
    int simple;
    uint8_t packet, ts, seq, event, flags;
};
extern struct pfw_keys pfw_keys;
/* pfw_packet, any keys */
size_t pfw_packet_any(uint8_t *p, uint64_t ts, uint32_t seq, uint32_t flags, const uint8_t *ev, size_t n);
/* the straight path's packet at p, its body of more than 127 bytes at p + 2:
 * its length in front of it (the body moves up); returns the packet's size */
size_t pfw_relen(uint8_t *p, size_t body);

static inline uint8_t *pfw_vput(uint8_t *p, uint64_t v)
{
    while (v > 0x7f) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Trace.packet (length-delimited) holding a TracePacket with timestamp,
 * trusted_packet_sequence_id, track_event = the packed TrackEvent ev[0..n)
 * and sequence_flags, in the order protobuf-c writes them (by field
 * number): the bytes protobuf-c would write for that packet.  Returns the
 * number of bytes written at p (room: PFW_ROOM + n). */
static inline size_t pfw_packet(uint8_t *p, uint64_t ts, uint32_t seq, uint32_t flags, const uint8_t *ev, size_t n)
{
    if (__builtin_expect(!pfw_keys.simple, 0))
        return pfw_packet_any(p, ts, seq, flags, ev, n);
    /* the body first, after the packet's key and room for a 1-byte length
     * (the common case: a longer one moves the body up) */
    uint8_t *const b = p + 2, *q = b;
    *q++ = pfw_keys.ts;
    q = pfw_vput(q, ts);
    *q++ = pfw_keys.seq;
    q = pfw_vput(q, seq);
    *q++ = pfw_keys.event;
    q = pfw_vput(q, n);
    if (n <= PFW_EVENT_SLACK) /* one fixed-size copy (the bytes past ev's end are overwritten below) */
        __builtin_memcpy(q, ev, PFW_EVENT_SLACK);
    else
        __builtin_memcpy(q, ev, n);
    q += n;
    *q++ = pfw_keys.flags;
    q = pfw_vput(q, flags);
    const size_t body = (size_t)(q - b);
    p[0] = pfw_keys.packet;
    if (__builtin_expect(body > 0x7f, 0))
        return pfw_relen(p, body);
    p[1] = (uint8_t)body;
    return 2 + body;
}

#endif
