/*
 * The job's output as it comes, for cordon serve: when serve runs `cordon
 * run`, it sets CORDON_OUTPUT_FD and hands the child a pipe on that
 * descriptor; each chunk the job writes is copied there as one JSON line,
 * {"stream": "stdout" | "stderr", "text": "..."}, its escape sequences and
 * control characters removed as in the envelope. Without the variable, or
 * when the descriptor is not a pipe, nothing is written; when the pipe is
 * full (serve not reading), the copy stops. Before any chunk, one line
 * {"output_cap": N} says the job's output_kb in bytes, which serve holds
 * each stream to, as the envelope does. The envelope at
 * the job's end stays what counts; the copy is for watching.
 */
#include "launcher.h"

#include "envelope.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -2: not looked at yet; -1: none. */
static int tee_fd = -2;

static int
tee_open(void)
{
	const char *v = getenv("CORDON_OUTPUT_FD");
	struct stat st;
	char *end;
	long fd;

	if (v == NULL)
		return -1;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || fd < 3 || fd > 1024)
		return -1;
	if (fstat((int)fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return -1;
	/* The job's loop never waits on serve: a full pipe drops the copy. */
	int fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || fcntl((int)fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return (int)fd;
}

/* Writes line (taken) as one JSON line on the pipe, if there is one. */
static void
tee_line(json_t *line)
{
	char *text = line != NULL ? json_dumps(line, JSON_COMPACT) : NULL;

	json_decref(line);
	if (text == NULL)
		return;
	size_t n = strlen(text);
	text[n] = '\n';
	/* A reader gone, or so slow the pipe is full: the copy stops there
	 * (a line cut short is its last), and the job goes on. */
	for (size_t off = 0; off < n + 1;) {
		ssize_t w = write(tee_fd, text + off, n + 1 - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(tee_fd);
			tee_fd = -1;
			break;
		}
		off += (size_t)w;
	}
	free(text);
}

void
launcher_output_tee(bool is_err, const void *data, size_t len)
{
	json_t *c;

	if (tee_fd == -2)
		tee_fd = tee_open();
	if (tee_fd < 0 || len == 0)
		return;
	c = envelope_clean(data, len, len);
	tee_line(json_pack("{s:s, s:O}", "stream", is_err ? "stderr" : "stdout",
	    "text", json_object_get(c, "text")));
	json_decref(c);
}

void
launcher_output_tee_cap(uint64_t cap)
{
	if (tee_fd == -2)
		tee_fd = tee_open();
	if (tee_fd < 0 || cap == 0)
		return;
	tee_line(json_pack("{s:I}", "output_cap", (json_int_t)cap));
}
