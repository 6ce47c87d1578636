/* An LD_PRELOAD shim that makes one part of the disk slow or failing, for the server's tests.
 *
 * The file named by $FAULTFS_CTL, read again on each call while it exists, holds one line:
 *
 *     delay <path-substring> <ms>   fsync/fdatasync of a matching file first sleep <ms>
 *     eio <path-substring> 0        write/pwrite/fsync/fdatasync of a matching file fail (EIO)
 *
 * A file matches when its path (/proc/self/fd/<fd>) contains <path-substring>. Without the
 * control file every call goes straight to libc. Built by tests/integration/faultfs.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum mode { PASS, DELAY, FAIL };

struct rule {
    enum mode mode;
    char match[256];
    long ms;
};

static struct rule read_rule(void) {
    struct rule rule = {PASS, "", 0};
    const char *ctl = getenv("FAULTFS_CTL");
    if (ctl == NULL) return rule;
    int saved = errno;
    int fd = open(ctl, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return rule;
    }
    char buf[400];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    errno = saved;
    if (n <= 0) return rule;
    buf[n] = '\0';
    char word[16];
    if (sscanf(buf, "%15s %255s %ld", word, rule.match, &rule.ms) != 3) return rule;
    if (strcmp(word, "delay") == 0) rule.mode = DELAY;
    if (strcmp(word, "eio") == 0) rule.mode = FAIL;
    return rule;
}

static int matches(int fd, const struct rule *rule) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int saved = errno;
    ssize_t n = readlink(link, path, sizeof path - 1);
    errno = saved;
    if (n <= 0) return 0;
    path[n] = '\0';
    return strstr(path, rule->match) != NULL;
}

/* -1 when the call must fail with EIO, 0 to go on (after any delay). */
static int inject(int fd, int is_sync) {
    struct stat st;
    const char *ctl = getenv("FAULTFS_CTL");
    int saved = errno;
    if (ctl == NULL || stat(ctl, &st) != 0) {
        errno = saved;
        return 0;
    }
    errno = saved;
    struct rule rule = read_rule();
    if (rule.mode == PASS || !matches(fd, &rule)) return 0;
    if (rule.mode == FAIL) {
        errno = EIO;
        return -1;
    }
    if (is_sync && rule.ms > 0) {
        struct timespec ts = {rule.ms / 1000, (rule.ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        errno = saved;
    }
    return 0;
}

typedef int (*sync_fn)(int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);

#define REAL(name, type) \
    static type real_##name; \
    if (real_##name == NULL) real_##name = (type)dlsym(RTLD_NEXT, #name)

int fsync(int fd) {
    REAL(fsync, sync_fn);
    if (inject(fd, 1) < 0) return -1;
    return real_fsync(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync, sync_fn);
    if (inject(fd, 1) < 0) return -1;
    return real_fdatasync(fd);
}

ssize_t write(int fd, const void *buf, size_t count) {
    REAL(write, write_fn);
    if (fd > 2 && inject(fd, 0) < 0) return -1;
    return real_write(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite, pwrite_fn);
    if (inject(fd, 0) < 0) return -1;
    return real_pwrite(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite64, pwrite_fn);
    if (inject(fd, 0) < 0) return -1;
    return real_pwrite64(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev, writev_fn);
    if (fd > 2 && inject(fd, 0) < 0) return -1;
    return real_writev(fd, iov, iovcnt);
}
