/* A process whose main thread has exited while another runs, for the monitor's tests.
 *
 * main closes every descriptor but 0, 1 and 2, starts a thread and exits with
 * pthread_exit, leaving a zombie main thread. The thread touches 8 MiB, writes "ready",
 * and waits for a line on its standard input: at the first it writes 1 MiB to the file
 * named by its argument (default /dev/null), fsyncs and deletes it and writes "written";
 * at the next, or at the end of its input, it ends. A test that only needs it alive keeps
 * its standard input open and writes nothing. Exit 3: the file could not be written. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *path;
static char block[1 << 20];

static void *work(void *arg) {
    (void)arg;
    char *kept = malloc(8 << 20), line[8];
    memset(kept, 1, 8 << 20);
    write(1, "ready\n", 6);
    if (read(0, line, sizeof line) <= 0) return 0;
    memset(block, 'y', sizeof block);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, block, sizeof block) != sizeof block || fsync(fd) || close(fd)
        || unlink(path)) _exit(3);
    write(1, "written\n", 8);
    read(0, line, sizeof line);
    return kept;
}

int main(int argc, char **argv) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    path = argc > 1 ? argv[1] : "/dev/null";
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    pthread_exit(0);
}
