#include "CHeraldSQLite.h"
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

// A VFS over the default one that writes each WAL frame in one call. SQLite writes a frame as
// its 24-byte header and then its page, two writes to adjacent offsets: two system calls, and the
// header's page of the file looked up and dirtied twice. Here a write of at most
// `HOLD_LIMIT` bytes to a WAL file is held; the next call on that file writes it, joined to its
// own data when that data follows it directly, or on its own first when anything else comes (a
// read, a sync, a size, a close, any other write). Nothing of SQLite's order changes: a frame is
// in the file before the WAL is synced, read or closed, so before any commit is visible to readers.

#define HOLD_LIMIT 64

typedef struct HeldWrite {
    sqlite3_int64 offset;
    int length;
    unsigned char bytes[HOLD_LIMIT];
} HeldWrite;

typedef struct WALFile {
    sqlite3_file base;
    sqlite3_file *real;
    int isWAL;
    HeldWrite held;
    unsigned char *joined;
    int joinedCapacity;
} WALFile;

static sqlite3_vfs *realVFS;
static sqlite3_vfs heraldVFS;
static sqlite3_io_methods walMethods;

static int flushHeld(WALFile *f) {
    if (f->held.length == 0) return SQLITE_OK;
    int length = f->held.length;
    f->held.length = 0;
    return f->real->pMethods->xWrite(f->real, f->held.bytes, length, f->held.offset);
}

static int walClose(sqlite3_file *file) {
    WALFile *f = (WALFile *)file;
    int flushed = flushHeld(f);
    int closed = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    free(f->joined);
    f->joined = NULL;
    return flushed != SQLITE_OK ? flushed : closed;
}

static int walRead(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xRead(f->real, buffer, amount, offset);
}

static int walWrite(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    WALFile *f = (WALFile *)file;
    if (f->isWAL && f->held.length == 0 && amount > 0 && amount <= HOLD_LIMIT) {
        memcpy(f->held.bytes, data, (size_t)amount);
        f->held.offset = offset;
        f->held.length = amount;
        return SQLITE_OK;
    }
    if (f->held.length > 0 && f->held.offset + f->held.length == offset) {
        int total = f->held.length + amount;
        if (total > f->joinedCapacity) {
            unsigned char *grown = realloc(f->joined, (size_t)total);
            if (grown == NULL) goto separately;
            f->joined = grown;
            f->joinedCapacity = total;
        }
        memcpy(f->joined, f->held.bytes, (size_t)f->held.length);
        memcpy(f->joined + f->held.length, data, (size_t)amount);
        sqlite3_int64 start = f->held.offset;
        f->held.length = 0;
        return f->real->pMethods->xWrite(f->real, f->joined, total, start);
    }
separately: {
        int rc = flushHeld(f);
        if (rc != SQLITE_OK) return rc;
        return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
}

static int walTruncate(sqlite3_file *file, sqlite3_int64 size) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xTruncate(f->real, size);
}

static int walSync(sqlite3_file *file, int flags) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xSync(f->real, flags);
}

static int walFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xFileSize(f->real, size);
}

static int walLock(sqlite3_file *file, int lock) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xLock(f->real, lock);
}

static int walUnlock(sqlite3_file *file, int lock) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xUnlock(f->real, lock);
}

static int walCheckReservedLock(sqlite3_file *file, int *result) {
    WALFile *f = (WALFile *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, result);
}

static int walFileControl(sqlite3_file *file, int op, void *argument) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xFileControl(f->real, op, argument);
}

static int walSectorSize(sqlite3_file *file) {
    WALFile *f = (WALFile *)file;
    return f->real->pMethods->xSectorSize(f->real);
}

static int walDeviceCharacteristics(sqlite3_file *file) {
    WALFile *f = (WALFile *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int walShmMap(sqlite3_file *file, int region, int size, int extend, void volatile **memory) {
    WALFile *f = (WALFile *)file;
    if (f->real->pMethods->iVersion < 2 || f->real->pMethods->xShmMap == NULL) return SQLITE_IOERR_SHMMAP;
    return f->real->pMethods->xShmMap(f->real, region, size, extend, memory);
}

static int walShmLock(sqlite3_file *file, int offset, int n, int flags) {
    WALFile *f = (WALFile *)file;
    if (f->real->pMethods->iVersion < 2 || f->real->pMethods->xShmLock == NULL) return SQLITE_IOERR_SHMLOCK;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void walShmBarrier(sqlite3_file *file) {
    WALFile *f = (WALFile *)file;
    if (f->real->pMethods->iVersion < 2 || f->real->pMethods->xShmBarrier == NULL) return;
    f->real->pMethods->xShmBarrier(f->real);
}

static int walShmUnmap(sqlite3_file *file, int delete) {
    WALFile *f = (WALFile *)file;
    if (f->real->pMethods->iVersion < 2 || f->real->pMethods->xShmUnmap == NULL) return SQLITE_OK;
    return f->real->pMethods->xShmUnmap(f->real, delete);
}

static int walFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **pointer) {
    WALFile *f = (WALFile *)file;
    int rc = flushHeld(f);
    if (rc != SQLITE_OK) return rc;
    if (f->real->pMethods->iVersion < 3 || f->real->pMethods->xFetch == NULL) {
        *pointer = NULL;
        return SQLITE_OK;
    }
    return f->real->pMethods->xFetch(f->real, offset, amount, pointer);
}

static int walUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    WALFile *f = (WALFile *)file;
    if (f->real->pMethods->iVersion < 3 || f->real->pMethods->xUnfetch == NULL) return SQLITE_OK;
    return f->real->pMethods->xUnfetch(f->real, offset, pointer);
}

static int heraldOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    WALFile *f = (WALFile *)file;
    memset(f, 0, sizeof(WALFile));
    f->real = (sqlite3_file *)&f[1];
    int rc = realVFS->xOpen(realVFS, name, f->real, flags, outFlags);
    if (f->real->pMethods == NULL) {
        // The open failed before the file had methods: SQLite calls none on it.
        f->base.pMethods = NULL;
        return rc;
    }
    f->isWAL = (flags & SQLITE_OPEN_WAL) != 0;
    f->base.pMethods = &walMethods;
    return rc;
}

int herald_sqlite_join_wal_frame_writes(void) {
    if (realVFS != NULL) return SQLITE_OK;
    sqlite3_vfs *found = sqlite3_vfs_find(NULL);
    if (found == NULL) return SQLITE_ERROR;
    walMethods = (sqlite3_io_methods){
        3, walClose, walRead, walWrite, walTruncate, walSync, walFileSize, walLock, walUnlock, walCheckReservedLock,
        walFileControl, walSectorSize, walDeviceCharacteristics, walShmMap, walShmLock, walShmBarrier, walShmUnmap,
        walFetch, walUnfetch,
    };
    heraldVFS = *found;
    heraldVFS.zName = "herald";
    heraldVFS.szOsFile = (int)sizeof(WALFile) + found->szOsFile;
    heraldVFS.xOpen = heraldOpen;
    heraldVFS.pNext = NULL;
    realVFS = found;
    return sqlite3_vfs_register(&heraldVFS, 1);
}
