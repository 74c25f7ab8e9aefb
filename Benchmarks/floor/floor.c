// The floor under issue 18's single-event budget: what the smallest possible program spends, per
// event, on the work Herald cannot skip. A C server reads one small HTTP request per event over a
// keep-alive connection, finds the device by its token in Herald's own schema, commits the event
// and its delivery in one transaction (WAL, synchronous=FULL, with the outcomes of the pushes
// answered since the last commit, as Herald's group commit does), answers, sends a 300-byte push
// to a peer over TCP and reads its reply. No TLS, no HTTP/2, no JSON, no allocations per event.
// The load (open loop) and the peer run in a second process, so getrusage(RUSAGE_SELF) of the
// server is the server's alone.
//
//   cc -O2 -o floor floor.c -lsqlite3 -lpthread
//   ./floor serve DB PORT THREADS     (THREADS 1: one thread; 3: an HTTP loop, a worker, a push loop)
//   ./floor load PORT RATE EVENTS     (the client and the peer; when it ends, the server prints
//                                      its CPU ms per event after 200 warm-up events, as JSON)
//   FLOOR_STORE=full|normal|none      (Herald's synchronous=FULL; no sync per commit; no store)
//
// Benchmarks/floor.sh builds it, makes the database with Herald's migrations and runs both.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ 320   // a single-event publish, headers and body
#define RESP 160  // 202 with an event id
#define PUSH 300  // an APNs request's headers and payload
#define REPLY 40  // an APNs answer

static void die(const char *what) { perror(what); exit(1); }

static int readn(int fd, char *buf, int n) {
    int got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (int)r;
    }
    return got;
}

static void writen(int fd, const char *buf, int n) {
    int put = 0;
    while (put < n) {
        ssize_t w = write(fd, buf + put, n - put);
        if (w <= 0) die("write");
        put += (int)w;
    }
}

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static double cpu_ms(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec / 1e3 + u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3;
}

// MARK: the store: Herald's statements, prepared once

static sqlite3 *db;
static int no_store;  // FLOOR_STORE=none: the network alone, to split the figure
static sqlite3_stmt *s_route, *s_begin, *s_app, *s_event, *s_delivery, *s_count, *s_was, *s_outcome, *s_commit;

static void prep(sqlite3_stmt **s, const char *sql) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
        exit(1);
    }
}

static void run(sqlite3_stmt *s) {
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {}
    if (rc != SQLITE_DONE) { fprintf(stderr, "step: %s\n", sqlite3_errmsg(db)); exit(1); }
    sqlite3_reset(s);
}

static void open_store(const char *path) {
    const char *store = getenv("FLOOR_STORE");  // full (Herald's), normal (no sync per commit), none
    no_store = store && !strcmp(store, "none");
    if (no_store) return;
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);  // as Herald's store: no mutex on each allocation
    if (sqlite3_open(path, &db) != SQLITE_OK) die("open");
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=5000", 0, 0, 0);
    sqlite3_exec(db, store && !strcmp(store, "normal") ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL", 0, 0, 0);
    sqlite3_exec(db, "INSERT INTO apps (id, created_at) VALUES ('floor', 0) ON CONFLICT DO NOTHING", 0, 0, 0);
    // One statement for the 5,000 devices: compiling each insert took most of a minute under valgrind.
    sqlite3_stmt *device;
    prep(&device, "INSERT INTO devices (app_id, platform, token, attributes, created_at, updated_at, last_seen) "
                  "VALUES ('floor', 'ios', ?, '{\"environment\":\"production\"}', 0, 0, 0) ON CONFLICT DO NOTHING");
    sqlite3_exec(db, "BEGIN", 0, 0, 0);
    for (int i = 0; i < 5000; i++) {
        char token[65];
        snprintf(token, sizeof token, "%064x", i);
        sqlite3_bind_text(device, 1, token, 64, SQLITE_TRANSIENT);
        run(device);
    }
    sqlite3_exec(db, "COMMIT", 0, 0, 0);
    sqlite3_finalize(device);
    prep(&s_route, "SELECT * FROM devices WHERE app_id = ? AND token = ? AND disabled_reason IS NULL");
    prep(&s_begin, "BEGIN IMMEDIATE");
    prep(&s_app, "INSERT INTO apps (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING");
    prep(&s_event, "INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key, fcm_data) "
                   "VALUES (?, 'floor', 'custom', 'alert', 10, NULL, ?, ?, ?, NULL, NULL) ");
    prep(&s_delivery, "INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, lease_until, apns_id, expires_at, created_at, updated_at, platform) "
                      "VALUES (?, ?, 'floor', 'sending', 1, ?, ?, ?, ?, ?, ?, 'ios')");
    prep(&s_count, "UPDATE delivery_counts SET n = n + ? WHERE state = ? AND reason = ''");
    prep(&s_was, "SELECT state, last_reason FROM deliveries WHERE id = ?");
    prep(&s_outcome, "UPDATE deliveries SET state = 'delivered', last_reason = NULL, lease_until = NULL, updated_at = ? WHERE id = ?");
    prep(&s_commit, "COMMIT");
    sqlite3_exec(db, "INSERT INTO delivery_counts (state, reason, n) VALUES ('sending', '', 0), ('delivered', '', 0) ON CONFLICT DO NOTHING", 0, 0, 0);
}

// A version-7-shaped id: the millisecond, then a counter where Herald draws random bits.
static void event_id(char out[37], int64_t ms, uint64_t n) {
    snprintf(out, 37, "%08x-%04x-7%03x-8%03x-%012llx", (unsigned)(ms >> 16), (unsigned)(ms & 0xffff),
             (unsigned)(n >> 48) & 0xfff, (unsigned)(n >> 36) & 0xfff, (unsigned long long)(n & 0xffffffffffffULL));
}

static uint64_t sequence;


// Route, then commit the event, its delivery and the outcomes of the pushes answered since the
// last commit.
static int64_t enqueue(const char *token, const int64_t *outcomes, int count) {
    if (no_store) return (int64_t)++sequence;
    int64_t ms = now_ms();
    sqlite3_bind_text(s_route, 1, "floor", -1, SQLITE_STATIC);
    sqlite3_bind_text(s_route, 2, token, 64, SQLITE_STATIC);
    int64_t row = 0;
    if (sqlite3_step(s_route) == SQLITE_ROW) row = sqlite3_column_int64(s_route, 0);
    sqlite3_reset(s_route);
    if (row == 0) { fprintf(stderr, "no device %.64s\n", token); exit(1); }

    char id[37], apns[37];
    event_id(id, ms, ++sequence);
    event_id(apns, ms, sequence ^ 0x5555);
    static const char payload[] = "{\"aps\":{\"alert\":{\"title\":\"New message\",\"body\":\"You have a new message\"},\"mutable-content\":1},\"e\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}";
    run(s_begin);
    sqlite3_bind_text(s_app, 1, "floor", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s_app, 2, ms);
    run(s_app);
    sqlite3_bind_text(s_event, 1, id, 36, SQLITE_STATIC);
    sqlite3_bind_blob(s_event, 2, payload, sizeof payload - 1, SQLITE_STATIC);
    sqlite3_bind_int64(s_event, 3, ms);
    sqlite3_bind_int64(s_event, 4, ms + 86400000);
    run(s_event);
    sqlite3_bind_text(s_delivery, 1, id, 36, SQLITE_STATIC);
    sqlite3_bind_int64(s_delivery, 2, row);
    sqlite3_bind_int64(s_delivery, 3, ms);
    sqlite3_bind_int64(s_delivery, 4, ms + 30000);
    sqlite3_bind_text(s_delivery, 5, apns, 36, SQLITE_STATIC);
    sqlite3_bind_int64(s_delivery, 6, ms + 86400000);
    sqlite3_bind_int64(s_delivery, 7, ms);
    sqlite3_bind_int64(s_delivery, 8, ms);
    run(s_delivery);
    int64_t delivery = sqlite3_last_insert_rowid(db);
    sqlite3_bind_int64(s_count, 1, 1);
    sqlite3_bind_text(s_count, 2, "sending", -1, SQLITE_STATIC);
    run(s_count);
    for (int i = 0; i < count; i++) {
        sqlite3_bind_int64(s_was, 1, outcomes[i]);
        run(s_was);
        sqlite3_bind_int64(s_outcome, 1, ms);
        sqlite3_bind_int64(s_outcome, 2, outcomes[i]);
        run(s_outcome);
    }
    if (count) {
        sqlite3_bind_int64(s_count, 1, -count);
        sqlite3_bind_text(s_count, 2, "sending", -1, SQLITE_STATIC);
        run(s_count);
        sqlite3_bind_int64(s_count, 1, count);
        sqlite3_bind_text(s_count, 2, "delivered", -1, SQLITE_STATIC);
        run(s_count);
    }
    run(s_commit);
    return delivery;
}

// MARK: the server

static int client_fd, peer_fd;
static _Atomic long events_total;
static double cpu_at_warm;  // after the first 200 events

static void counted(void) {
    if (++events_total == 200) cpu_at_warm = cpu_ms();
}

// The load closed its connection: the server's CPU per event after warm-up.
static void report(void) {
    printf("{\"events\":%ld,\"cpu_ms_per_event\":%.3f}\n", events_total - 200, (cpu_ms() - cpu_at_warm) / (double)(events_total - 200));
    fflush(stdout);
    exit(0);
}

static const char response[RESP] = "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 62\r\n\r\n"
                                   "{\"event_id\":\"0197a0b0-0000-7000-8000-000000000000\",\"devices\":1}";

static char *token_in(char *req) { return req + REQ - 64; }  // the load puts the token last

static void serve_one_thread(void) {
    char req[REQ], push[PUSH], reply[REPLY];
    memset(push, 'p', sizeof push);
    int64_t last = 0;
    for (;;) {
        if (readn(client_fd, req, REQ) < 0) report();
        int64_t delivery = enqueue(token_in(req), &last, last != 0);
        writen(client_fd, response, RESP);
        writen(peer_fd, push, PUSH);
        if (readn(peer_fd, reply, REPLY) < 0) return;
        last = delivery;  // its outcome joins the next commit
        counted();
    }
}

// Three threads, the fewest hand-overs an asynchronous server makes: the HTTP loop reads and
// answers, the worker commits, the push loop sends and reads the reply. Each hand-over is a queue
// of one and an eventfd, as an event loop is woken.
typedef struct { int efd; pthread_mutex_t m; int64_t slots[64]; int head, tail; } queue_t;

static void q_init(queue_t *q) { q->efd = eventfd(0, 0); pthread_mutex_init(&q->m, NULL); q->head = q->tail = 0; }
static void q_put(queue_t *q, int64_t v) {
    pthread_mutex_lock(&q->m);
    q->slots[q->tail++ % 64] = v;
    pthread_mutex_unlock(&q->m);
    uint64_t one = 1;
    if (write(q->efd, &one, 8) != 8) die("eventfd");
}
static int q_take(queue_t *q, int64_t *v) {
    pthread_mutex_lock(&q->m);
    int got = q->head != q->tail;
    if (got) *v = q->slots[q->head++ % 64];
    pthread_mutex_unlock(&q->m);
    return got;
}
static void q_drain(queue_t *q) { uint64_t n; if (read(q->efd, &n, 8) != 8) die("eventfd read"); }

static queue_t to_worker, to_http, to_push;
static char tokens[64][64];

static void *http_loop(void *arg) {
    (void)arg;
    char req[REQ];
    struct pollfd fds[2] = {{client_fd, POLLIN, 0}, {to_http.efd, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) die("poll");
        if (fds[0].revents) {
            if (readn(client_fd, req, REQ) < 0) report();
            static unsigned next_slot;
            int slot = (int)(next_slot++ % 64);
            memcpy(tokens[slot], token_in(req), 64);
            q_put(&to_worker, -1 - slot);  // negative: a request in that slot
        }
        if (fds[1].revents) {
            q_drain(&to_http);
            int64_t v;
            while (q_take(&to_http, &v)) writen(client_fd, response, RESP);
        }
    }
    return NULL;
}

static void *push_loop(void *arg) {
    (void)arg;
    char push[PUSH], reply[REPLY];
    memset(push, 'p', sizeof push);
    struct pollfd fds[2] = {{peer_fd, POLLIN, 0}, {to_push.efd, POLLIN, 0}};
    int64_t inflight[64];
    int in_head = 0, in_tail = 0;
    for (;;) {
        if (poll(fds, 2, -1) < 0) die("poll");
        if (fds[1].revents) {
            q_drain(&to_push);
            int64_t v;
            while (q_take(&to_push, &v)) { writen(peer_fd, push, PUSH); inflight[in_tail++ % 64] = v; }
        }
        if (fds[0].revents) {
            char *r = reply;
            if (readn(peer_fd, r, REPLY) < 0) exit(0);
            q_put(&to_worker, inflight[in_head++ % 64]);  // positive: an outcome
        }
    }
    return NULL;
}

static void serve_three_threads(void) {
    q_init(&to_worker); q_init(&to_http); q_init(&to_push);
    pthread_t a, b;
    pthread_create(&a, NULL, http_loop, NULL);
    pthread_create(&b, NULL, push_loop, NULL);
    int64_t outcomes[64];
    int answered = 0;
    for (;;) {
        q_drain(&to_worker);
        int64_t v;
        while (q_take(&to_worker, &v)) {
            if (v > 0) { outcomes[answered++ % 64] = v; continue; }  // they join the next commit
            int64_t delivery = enqueue(tokens[-1 - v], outcomes, answered);
            answered = 0;
            q_put(&to_http, delivery);
            q_put(&to_push, delivery);
            counted();
        }
    }
}

static int listen_on(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    listen(s, 4);
    return s;
}

static int connect_to(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    // Up to a minute: a server under valgrind on a slow machine takes a while to listen.
    for (int i = 0; connect(s, (struct sockaddr *)&a, sizeof a) < 0; i++) {
        if (i > 1200) die("connect");
        usleep(50000);
    }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "serve")) {
        open_store(argv[2]);
        int port = atoi(argv[3]), threads = atoi(argv[4]);
        int ls = listen_on(port);
        client_fd = accept(ls, NULL, NULL);  // the load's client, then its peer
        peer_fd = accept(ls, NULL, NULL);
        int one = 1;
        setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(peer_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (threads == 1) serve_one_thread(); else serve_three_threads();
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "load")) {
        int port = atoi(argv[2]);
        double rate = atof(argv[3]);
        long events = atol(argv[4]);
        int client = connect_to(port);
        usleep(100000);
        int peer = connect_to(port);
        if (fork() == 0) {  // the peer: a reply for every push
            close(client);  // so the server sees the client's end
            char push[PUSH], reply[REPLY];
            memset(reply, 'r', sizeof reply);
            while (readn(peer, push, PUSH) > 0) writen(peer, reply, REPLY);
            _exit(0);
        }
        char req[REQ], resp[RESP];
        memset(req, 'q', sizeof req);
        memcpy(req, "POST /v1/events HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n", 76);
        struct timespec next;
        clock_gettime(CLOCK_MONOTONIC, &next);
        long period_ns = (long)(1e9 / rate);
        for (long i = 0; i < events; i++) {
            char token[65];
            snprintf(token, sizeof token, "%064lx", (unsigned long)(i % 5000));
            memcpy(req + REQ - 64, token, 64);
            writen(client, req, REQ);
            if (readn(client, resp, RESP) < 0) die("response");
            next.tv_nsec += period_ns;
            while (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        return 0;
    }
    fprintf(stderr, "usage: floor serve DB PORT THREADS | floor load PORT RATE EVENTS\n");
    return 2;
}
