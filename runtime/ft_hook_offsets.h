/*
 * ft_hook_offsets.h -- the structure offsets hooks_pg.S uses, in one place:
 * included by hooks_pg.S (preprocessed assembly, so only #defines here) and
 * by hooks_cyg.c, which _Static_asserts them against offsetof().
 */
#ifndef FT_HOOK_OFFSETS_H
#define FT_HOOK_OFFSETS_H

/* struct ft_thread (funtrace_abi.h) */
#define FT_THR_OFF_POS 0
#define FT_THR_OFF_MASK 8
#define FT_THR_OFF_COUNTDOWN 16
#define FT_THR_OFF_WRAP 24
#define FT_THR_OFF_ADDR_HI 32
#define FT_THR_OFF_TSC_HI 36
#define FT_THR_OFF_SELF 40

/* struct ft_hot_settings (ft_internal.h) */
#define FT_HOT_OFF_MODE 0
#define FT_HOT_MODE_OFF_BIT 0x80 /* FT_MODE_OFF */
#define FT_HOT_MODE_SAMPLED 1    /* FT_MODE_SAMPLED (FT_MODE_EXACT below it, FT_MODE_OFF set above it) */
#define FT_HOT_OFF_SAMPLE_K 8
#define FT_HOT_OFF_REG_BASE 16
#define FT_HOT_OFF_REG_SPAN 24
#define FT_HOT_OFF_SAMPLE_RETS 32
#define FT_HOT_OFF_PARK 40       /* park.S */
#define FT_HOT_OFF_FREEZE_SEQ 64 /* park.S */

#endif
