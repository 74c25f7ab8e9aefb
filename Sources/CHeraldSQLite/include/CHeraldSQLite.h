#ifndef CHERALDSQLITE_H
#define CHERALDSQLITE_H

/// Turns off SQLite's memory statistics for the process (`SQLITE_CONFIG_MEMSTATUS`). With them
/// on, every allocation and free SQLite makes takes a process-wide mutex to count bytes nobody
/// reads: about 150 lock and unlock pairs a Matrix notify. Takes effect only before SQLite
/// initializes (the first connection opened in the process).
/// Returns SQLite's result code: 0 (SQLITE_OK), or 21 (SQLITE_MISUSE) once SQLite is initialized.
int herald_sqlite_disable_memory_statistics(void);

/// Registers, as the process's default VFS, one over SQLite's default that writes each WAL frame
/// (its 24-byte header and its page, which SQLite writes separately) in one system call; every
/// other call goes through unchanged, and a held header is written before anything else is done
/// with its file. Call once, before the first connection; later calls do nothing.
/// Returns SQLite's result code (0, SQLITE_OK, on success).
int herald_sqlite_join_wal_frame_writes(void);

#endif
