/* ociversion: sets the ociVersion of the bundle given to `create --bundle
 * DIR` to OCI_VERSION, then executes RUNTIME with the same arguments.
 * BenchmarkCRIVsContainerd puts it between containerd 2.4.2, which writes
 * spec 1.3.0, and crun 1.8.1, which accepts 1.0 and 1.1 only.
 * Build: cc -static -DRUNTIME='"/usr/bin/crun"' -DOCI_VERSION='"1.1.0"' */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int setversion(const char *bundle)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	int fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	char *buf = malloc(st.st_size + 1);
	if (!buf || read(fd, buf, st.st_size) != st.st_size)
		return -1;
	buf[st.st_size] = 0;
	char *key = strstr(buf, "\"ociVersion\"");
	if (!key)
		return close(fd);
	char *open_quote = strchr(key + strlen("\"ociVersion\""), '"');
	char *close_quote = open_quote ? strchr(open_quote + 1, '"') : NULL;
	if (!close_quote)
		return -1;
	size_t head = open_quote + 1 - buf, tail = st.st_size - (close_quote - buf);
	size_t vlen = strlen(OCI_VERSION);
	char *out = malloc(head + vlen + tail);
	if (!out)
		return -1;
	memcpy(out, buf, head);
	memcpy(out + head, OCI_VERSION, vlen);
	memcpy(out + head + vlen, close_quote, tail);
	size_t n = head + vlen + tail;
	if (pwrite(fd, out, n, 0) != (ssize_t)n || ftruncate(fd, n) < 0)
		return -1;
	return close(fd);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--bundle") == 0 && setversion(argv[i + 1]) < 0) {
			perror("ociversion: cannot set the bundle's ociVersion");
			return 125;
		}
	}
	argv[0] = RUNTIME;
	execv(RUNTIME, argv);
	perror("ociversion: cannot execute " RUNTIME);
	return 127;
}
