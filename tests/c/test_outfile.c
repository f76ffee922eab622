/* test_outfile.c - output files: a hidden random temporary name beside the output, created new
 * (a name planted before the create is skipped, never written through), the umask's mode, commit
 * renames, abort and failures leave nothing, and the hook hears every name before it exists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/error.h"
#include "base/outfile.h"

enum { MAX_CALLS = 8 };

static char dir[1024];

/* What a hook heard: each path (or "" for NULL), in order. */
typedef struct heard {
    char paths[MAX_CALLS][2048];
    int n;
    const char *plant_at_first; /* when set: a symlink to this file is created at the first name */
} heard;

static void on_temp(void *ctx, const char *path) {
    heard *h = ctx;
    assert_true(h->n < MAX_CALLS);
    snprintf(h->paths[h->n++], sizeof h->paths[0], "%s", path ? path : "");
    if (path && h->n == 1 && h->plant_at_first) assert_int_equal(symlink(h->plant_at_first, path), 0);
}

static void path_in_dir(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

/* The names in dir, sorted, joined by ' '. */
static void listing(char *buf, size_t cap) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
            if (buf[0]) strncat(buf, " ", cap - strlen(buf) - 1);
            strncat(buf, names[i]->d_name, cap - strlen(buf) - 1);
        }
        free(names[i]);
    }
    free(names);
}

static void read_all(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void write_text(jp_outfile *of, const char *text) {
    FILE *s = jp_outfile_stdio(of);
    assert_non_null(s);
    assert_int_equal(fputs(text, s) >= 0, 1);
    assert_int_equal(fclose(s), 0);
}

/* 1 when path is "<dir>/.<name>.<16 lowercase hex>.tmp". */
static int is_temp_name(const char *path, const char *name) {
    char prefix[2048];
    snprintf(prefix, sizeof prefix, "%s/.%s.", dir, name);
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || strlen(path) != n + 16 + 4 || strcmp(path + n + 16, ".tmp") != 0) return 0;
    for (size_t i = n; i < n + 16; i++)
        if (!strchr("0123456789abcdef", path[i])) return 0;
    return 1;
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("TEST_TMPDIR");
    snprintf(dir, sizeof dir, "%s/outfile_XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void commit_renames_a_hidden_random_file_into_place(void **state) {
    (void)state;
    char out[2048], text[64], names[4096];
    path_in_dir(out, sizeof out, "out.txt");
    heard h = {0};
    jp_temp_hook hook = {on_temp, &h};
    jp_outfile of;
    jp_error err;
    assert_int_equal(jp_outfile_open(&of, out, &hook, &err), JP_OK);
    assert_int_equal(h.n, 1);
    assert_true(is_temp_name(h.paths[0], "out.txt"));
    assert_string_equal(of.tmp_path, h.paths[0]);
    struct stat st;
    assert_int_equal(lstat(h.paths[0], &st), 0);
    assert_true(S_ISREG(st.st_mode));
    write_text(&of, "hello");
    assert_int_equal(jp_outfile_commit(&of, &err), JP_OK);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.paths[1], ""); /* told: nothing left to remove */
    read_all(out, text, sizeof text);
    assert_string_equal(text, "hello");
    listing(names, sizeof names);
    assert_string_equal(names, "out.txt");
    assert_null(of.tmp_path);
    assert_int_equal(of.fd, -1);
    unlink(out);
}

static void two_writers_get_different_names(void **state) {
    (void)state;
    char out[2048], names[4096];
    path_in_dir(out, sizeof out, "same.txt");
    jp_outfile a, b;
    jp_error err;
    assert_int_equal(jp_outfile_open(&a, out, NULL, &err), JP_OK);
    assert_int_equal(jp_outfile_open(&b, out, NULL, &err), JP_OK);
    assert_string_not_equal(a.tmp_path, b.tmp_path);
    jp_outfile_abort(&a);
    jp_outfile_abort(&b);
    jp_outfile_abort(&b); /* twice is harmless */
    listing(names, sizeof names);
    assert_string_equal(names, "");
}

/* The hook plants a link to a victim at the first name, between the choice of the name and the
 * create, as an attacker who guessed it would: the create refuses it (O_EXCL|O_NOFOLLOW) and a
 * new name is drawn; the victim and the planted link stay as they were. */
static void a_name_planted_before_the_create_is_skipped(void **state) {
    (void)state;
    char out[2048], victim[2048], text[64], target[2048];
    path_in_dir(out, sizeof out, "o.json");
    path_in_dir(victim, sizeof victim, "victim");
    FILE *v = fopen(victim, "w");
    assert_non_null(v);
    fputs("precious", v);
    fclose(v);
    heard h = {.plant_at_first = victim};
    jp_temp_hook hook = {on_temp, &h};
    jp_outfile of;
    jp_error err;
    assert_int_equal(jp_outfile_open(&of, out, &hook, &err), JP_OK);
    assert_int_equal(h.n, 2);
    assert_true(is_temp_name(h.paths[1], "o.json"));
    assert_string_not_equal(h.paths[0], h.paths[1]);
    write_text(&of, "new");
    assert_int_equal(jp_outfile_commit(&of, &err), JP_OK);
    read_all(victim, text, sizeof text);
    assert_string_equal(text, "precious");
    read_all(out, text, sizeof text);
    assert_string_equal(text, "new");
    ssize_t n = readlink(h.paths[0], target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, victim);
    unlink(h.paths[0]), unlink(victim), unlink(out);
}

/* Issue 30: 0644 less the umask, so a umask of 000 (or 002) still gives no one else write access. */
static void the_mode_is_0644_less_the_umask(void **state) {
    (void)state;
    char out[2048];
    path_in_dir(out, sizeof out, "mode.txt");
    const mode_t masks[] = {022, 077, 002, 000};
    const mode_t modes[] = {0644, 0600, 0644, 0644};
    for (size_t i = 0; i < 4; i++) {
        mode_t old = umask(masks[i]);
        jp_outfile of;
        jp_error err;
        assert_int_equal(jp_outfile_open(&of, out, NULL, &err), JP_OK);
        assert_int_equal(jp_outfile_commit(&of, &err), JP_OK);
        umask(old);
        struct stat st;
        assert_int_equal(stat(out, &st), 0);
        assert_int_equal(st.st_mode & 0777, modes[i]);
    }
    unlink(out);
}

static int failing_writer(const void *obj, FILE *out, jp_error *err) {
    (void)obj;
    fputs("half a page", out);
    return jp_error_set(err, JP_ERR_IO, 0, "the disk is full");
}

static int good_writer(const void *obj, FILE *out, jp_error *err) {
    (void)err;
    fputs(obj, out);
    return JP_OK;
}

/* A failed write leaves the old output as it was and no temporary file; err names the output. */
static void a_failed_write_leaves_the_old_output(void **state) {
    (void)state;
    char out[2048], text[64], names[4096];
    path_in_dir(out, sizeof out, "page.html");
    jp_error err;
    assert_int_equal(jp_outfile_write(out, NULL, good_writer, "old", &err), JP_OK);
    heard h = {0};
    jp_temp_hook hook = {on_temp, &h};
    assert_int_equal(jp_outfile_write(out, &hook, failing_writer, NULL, &err), JP_ERR_IO);
    char want[2200];
    snprintf(want, sizeof want, "%s: the disk is full", out);
    assert_string_equal(err.msg, want);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.paths[1], "");
    read_all(out, text, sizeof text);
    assert_string_equal(text, "old");
    listing(names, sizeof names);
    assert_string_equal(names, "page.html");
    unlink(out);
}

static void a_missing_directory_is_named(void **state) {
    (void)state;
    char out[2048], missing[1100], want[4200];
    path_in_dir(missing, sizeof missing, "nope");
    snprintf(out, sizeof out, "%s/out.txt", missing);
    heard h = {0};
    jp_temp_hook hook = {on_temp, &h};
    jp_outfile of;
    jp_error err;
    assert_int_equal(jp_outfile_open(&of, out, &hook, &err), JP_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot write: the directory %s does not exist", out, missing);
    assert_string_equal(err.msg, want);
    assert_int_equal(h.n, 2); /* the name it tried, then NULL */
    assert_string_equal(h.paths[1], "");
    assert_null(of.tmp_path);
    jp_outfile_abort(&of); /* harmless after a failed open */
}

/* A 250-byte name (NAME_MAX is 255) still gets a temporary file: its copy of the name is cut. */
static void a_long_name_is_cut_in_the_temporary_one(void **state) {
    (void)state;
    char name[251], out[2048], names[4096];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    path_in_dir(out, sizeof out, name);
    jp_outfile of;
    jp_error err;
    assert_int_equal(jp_outfile_open(&of, out, NULL, &err), JP_OK);
    const char *base = strrchr(of.tmp_path, '/') + 1;
    assert_int_equal(strlen(base), 1 + 200 + 1 + 16 + 4);
    assert_int_equal(jp_outfile_commit(&of, &err), JP_OK);
    listing(names, sizeof names);
    assert_string_equal(names, name);
    unlink(out);
}

/* Issue 30: a FIFO at the output (also through a symbolic link) is written as a stream, to the
 * reader that has it open; it stays a FIFO and nothing else appears in the directory. */
static void a_fifo_is_written_in_place(void **state) {
    (void)state;
    char fifo[2048], link_path[2048], names[4096], got[64];
    path_in_dir(fifo, sizeof fifo, "pipe");
    path_in_dir(link_path, sizeof link_path, "to-pipe");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink(fifo, link_path), 0);
    const char *names_given[] = {fifo, link_path};
    for (size_t i = 0; i < 2; i++) {
        int reader = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader first: the writer's open does not wait */
        assert_true(reader >= 0);
        jp_outfile of;
        jp_error err;
        heard h = {0};
        jp_temp_hook hook = {on_temp, &h};
        assert_int_equal(jp_outfile_open(&of, names_given[i], &hook, &err), JP_OK);
        assert_int_equal(of.stream, 1);
        assert_null(of.tmp_path);
        assert_int_equal(h.n, 0); /* no temporary file */
        write_text(&of, "streamed");
        assert_int_equal(jp_outfile_commit(&of, &err), JP_OK);
        ssize_t n = read(reader, got, sizeof got - 1);
        assert_int_equal(n, 8);
        got[n] = '\0';
        assert_string_equal(got, "streamed");
        close(reader);
        struct stat st;
        assert_int_equal(lstat(fifo, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));
        assert_int_equal(lstat(link_path, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
    }
    listing(names, sizeof names);
    assert_string_equal(names, "pipe to-pipe");
    unlink(fifo), unlink(link_path);
}

/* A character device (1:3, the null device): written, never replaced (as root a rename would
 * have). Root makes its own node in the test directory, so a regression never replaces the
 * machine's /dev/null; without root, /dev/null itself (then the rename could not succeed). */
static void a_character_device_is_written_in_place(void **state) {
    (void)state;
    char node[2048] = "/dev/null";
    if (geteuid() == 0) {
        path_in_dir(node, sizeof node, "null");
        assert_int_equal(mknod(node, S_IFCHR | 0666, makedev(1, 3)), 0);
    }
    jp_outfile of;
    jp_error err;
    assert_int_equal(jp_outfile_write(node, NULL, good_writer, "gone", &err), JP_OK);
    assert_int_equal(jp_outfile_open(&of, node, NULL, &err), JP_OK);
    assert_int_equal(of.stream, 1);
    jp_outfile_abort(&of);
    struct stat st;
    assert_int_equal(lstat(node, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    if (geteuid() == 0) unlink(node);
}

/* A symbolic link to a regular file (or to nothing), a directory: refused, left as they were. */
static void links_and_directories_are_refused(void **state) {
    (void)state;
    char target[2048], link_path[2048], dangling[2048], sub[2048], text[64], want[4200];
    path_in_dir(target, sizeof target, "target.txt");
    path_in_dir(link_path, sizeof link_path, "link.txt");
    path_in_dir(dangling, sizeof dangling, "dangling.txt");
    path_in_dir(sub, sizeof sub, "subdir");
    jp_error err;
    assert_int_equal(jp_outfile_write(target, NULL, good_writer, "old", &err), JP_OK);
    assert_int_equal(symlink(target, link_path), 0);
    assert_int_equal(symlink("/nonexistent/x", dangling), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    heard h = {0};
    jp_temp_hook hook = {on_temp, &h};
    assert_int_equal(jp_outfile_write(link_path, &hook, good_writer, "new", &err), JP_ERR_ARG);
    snprintf(want, sizeof want, "%s: is a symbolic link; refusing to replace it or write through it", link_path);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_int_equal(jp_outfile_write(dangling, &hook, good_writer, "new", &err), JP_ERR_ARG);
    assert_int_equal(jp_outfile_write(sub, &hook, good_writer, "new", &err), JP_ERR_ARG);
    snprintf(want, sizeof want, "%s: is a directory; refusing to write over it", sub);
    assert_string_equal(err.msg, want);
    assert_int_equal(h.n, 0); /* no temporary file was ever made */
    read_all(target, text, sizeof text);
    assert_string_equal(text, "old");
    struct stat st;
    assert_int_equal(lstat(link_path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(sub, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    unlink(target), unlink(link_path), unlink(dangling), rmdir(sub);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(commit_renames_a_hidden_random_file_into_place),
        cmocka_unit_test(two_writers_get_different_names),
        cmocka_unit_test(a_name_planted_before_the_create_is_skipped),
        cmocka_unit_test(the_mode_is_0644_less_the_umask),
        cmocka_unit_test(a_failed_write_leaves_the_old_output),
        cmocka_unit_test(a_missing_directory_is_named),
        cmocka_unit_test(a_long_name_is_cut_in_the_temporary_one),
        cmocka_unit_test(a_fifo_is_written_in_place),
        cmocka_unit_test(a_character_device_is_written_in_place),
        cmocka_unit_test(links_and_directories_are_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
