/*
 * fork.c -- fork() support: the child starts clean (its own registry with
 * only the forking thread, a fresh ring, generation 0, a rebuilt module
 * table, a new housekeeper); the parent is undisturbed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "ft_internal.h"

void ft_tsc_after_fork_child(void) FT_HIDDEN;
void ft_snapshot_after_fork_child(void) FT_HIDDEN;
void ft_fork_init(void) FT_HIDDEN;

static int locked; /* prepare took the registry lock (not while frozen) */

static void prepare(void)
{
    ft_hk_lock();
    locked = ft_lock();
}

static void parent(void)
{
    if (locked)
        ft_unlock();
    ft_hk_unlock();
}

static void child(void)
{
    struct ft_root *r = &funtrace_root;
    pthread_mutex_init(&ft_rt.lock, NULL);
    ft_freeze_after_fork_child(); /* a fork from a fatal-signal handler: thawed */
    /* ft_in_runtime stays raised (prepare) while we rebuild */
    r->pid = (uint64_t)getpid();
    ft_tsc_after_fork_child();
    ft_gens_after_fork_child();
    ft_registry_after_fork_child();
    ft_modules_after_fork_child();
    ft_snapshot_after_fork_child();
    if (locked) {
        ft_in_runtime--;
        ft_writer_leave(); /* the ft_lock() of prepare */
    }
    ft_housekeeper_start();
}

void ft_fork_init(void)
{
    pthread_atfork(prepare, parent, child);
}
