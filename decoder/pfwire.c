/*
 * pfwire.c -- TracePacket bytes around a packed TrackEvent (pfwire.h).  The
 * field numbers come from protobuf-c's generated descriptors, so the .proto
 * stays the one declaration of the format.
 */
#include "pfwire.h"

#include <string.h>

#include "perfetto_subset.pb-c.h"

enum { F_TS, F_SEQ, F_EVENT, F_FLAGS, NF };

static struct {
    int ok;
    uint8_t packet_tag[2]; /* Trace.packet's key */
    size_t packet_tag_len;
    /* every key one byte, the fields in the order below: pfw_packet's
     * straight path */
    int simple;
    /* TracePacket's four fields, by field number: which, and their keys */
    int which[NF];
    uint8_t tag[NF][2];
    size_t tag_len[NF];
} W;

size_t pfw_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v > 0x7f) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline size_t varint_len(uint64_t v)
{
    return 1 + (size_t)(63 - __builtin_clzll(v | 1)) / 7;
}

struct pfw_keys pfw_keys;

/* the key of an optional field of desc named name, of type type; 0 if none
 * such (or its key does not fit 2 bytes) */
static size_t key_of(const ProtobufCMessageDescriptor *desc, const char *name, ProtobufCType type, int wire,
                     uint8_t key[2], uint32_t *id)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(desc, name);
    if (!f || f->type != type || (f->label != PROTOBUF_C_LABEL_OPTIONAL && f->label != PROTOBUF_C_LABEL_REPEATED) ||
        (f->flags & PROTOBUF_C_FIELD_FLAG_PACKED))
        return 0;
    uint64_t k = (uint64_t)f->id << 3 | (unsigned)wire;
    if (varint_len(k) > 2)
        return 0;
    *id = f->id;
    return pfw_varint(key, k);
}

int pfw_init(void)
{
    if (W.ok)
        return 1;
    static const struct {
        const char *name;
        ProtobufCType type;
        int wire; /* 0 varint, 2 length-delimited */
    } want[NF] = {
        [F_TS] = {"timestamp", PROTOBUF_C_TYPE_UINT64, 0},
        [F_SEQ] = {"trusted_packet_sequence_id", PROTOBUF_C_TYPE_UINT32, 0},
        [F_EVENT] = {"track_event", PROTOBUF_C_TYPE_MESSAGE, 2},
        [F_FLAGS] = {"sequence_flags", PROTOBUF_C_TYPE_UINT32, 0},
    };
    uint32_t pid, ids[NF];
    uint8_t tags[NF][2];
    size_t lens[NF];
    W.packet_tag_len = key_of(&perfetto__protos__trace__descriptor, "packet", PROTOBUF_C_TYPE_MESSAGE, 2,
                              W.packet_tag, &pid);
    if (!W.packet_tag_len)
        return 0;
    for (int i = 0; i < NF; i++) {
        lens[i] = key_of(&perfetto__protos__trace_packet__descriptor, want[i].name, want[i].type, want[i].wire,
                         tags[i], &ids[i]);
        if (!lens[i])
            return 0;
    }
    /* protobuf-c writes a message's fields in field-number order */
    int order[NF] = {F_TS, F_SEQ, F_EVENT, F_FLAGS};
    for (int i = 1; i < NF; i++)
        for (int j = i; j > 0 && ids[order[j - 1]] > ids[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < NF; i++) {
        W.which[i] = order[i];
        memcpy(W.tag[i], tags[order[i]], 2);
        W.tag_len[i] = lens[order[i]];
    }
    W.simple = W.packet_tag_len == 1;
    for (int i = 0; i < NF; i++)
        W.simple &= W.tag_len[i] == 1 && W.which[i] == (int[]){F_TS, F_SEQ, F_EVENT, F_FLAGS}[i];
    if (W.simple)
        pfw_keys = (struct pfw_keys){1, W.packet_tag[0], W.tag[0][0], W.tag[1][0], W.tag[2][0], W.tag[3][0]};
    W.ok = 1;
    return 1;
}

size_t pfw_relen(uint8_t *p, size_t body)
{
    const size_t ll = varint_len(body);
    memmove(p + 1 + ll, p + 2, body);
    pfw_varint(p + 1, body);
    return 1 + ll + body;
}

size_t pfw_packet_any(uint8_t *p, uint64_t ts, uint32_t seq, uint32_t flags, const uint8_t *ev, size_t n)
{
    uint64_t val[NF];
    val[F_TS] = ts;
    val[F_SEQ] = seq;
    val[F_EVENT] = n; /* the event's length, then its bytes */
    val[F_FLAGS] = flags;
    size_t body = n;
    for (int i = 0; i < NF; i++)
        body += W.tag_len[i] + varint_len(val[W.which[i]]);
    memcpy(p, W.packet_tag, W.packet_tag_len);
    size_t o = W.packet_tag_len;
    o += pfw_varint(p + o, body);
    for (int i = 0; i < NF; i++) {
        memcpy(p + o, W.tag[i], W.tag_len[i]);
        o += W.tag_len[i];
        o += pfw_varint(p + o, val[W.which[i]]);
        if (W.which[i] == F_EVENT) {
            memcpy(p + o, ev, n);
            o += n;
        }
    }
    return o;
}
