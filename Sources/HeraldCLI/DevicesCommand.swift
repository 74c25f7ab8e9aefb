import ArgumentParser
import Foundation
import HeraldApp
import HeraldDelivery

/// `herald devices`: the store's devices, by the operator.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "Manage the devices in HERALD_DATABASE_URL.", subcommands: [DevicesImportCommand.self])
}

/// `herald devices import FILE|-`: registration bodies, one JSON object per line, into the store.
struct DevicesImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import devices: one POST /v1/push/register body per line (JSON lines), checked as the API checks them; a bad line is named and nothing is written.")

    @Argument(help: "The file of JSON lines, or - for standard input.") var file: String

    func run() async throws {
        let settings = try CLIOutput.namingTheField { try ServeSettings.load() }
        // Standard input is read twice (checked, then written): it is kept in a private file meanwhile.
        let path: String
        var spooled: URL?
        if file == "-" {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-import-\(UUID().uuidString).jsonl")
            guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw CLIOutput.invalid(field: "file", message: "cannot keep standard input in \(url.path)")
            }
            let out = try FileHandle(forWritingTo: url)
            while let chunk = try FileHandle.standardInput.read(upToCount: 1 << 20), !chunk.isEmpty { try out.write(contentsOf: chunk) }
            try out.close()
            (path, spooled) = (url.path, url)
        } else {
            guard FileManager.default.isReadableFile(atPath: file) else { throw CLIOutput.invalid(field: "file", message: "cannot read \(file)") }
            path = file
        }
        defer { if let spooled { try? FileManager.default.removeItem(at: spooled) } }
        let lines = JSONLines(path: path)
        do {
            let (counts, written) = try await CLIOutput.namingTheField {
                try await settings.withStore { store in
                    let importer = settings.deviceImport(store: store)
                    let counts = try await importer.check(lines)
                    return (counts, try await importer.write(lines))
                }
            }
            CLIOutput.printJSON(["imported": written, "apps": counts, "database": settings.databaseDescription])
        } catch let refused as DeviceImport.LineRefused {
            var line: [String: Any] = ["status": "invalid", "line": refused.line, "code": refused.refusal.code, "error": refused.refusal.message, "imported": 0]
            if let field = refused.refusal.field { line["field"] = field }
            CLIOutput.printJSON(line)
            throw ExitCode(2)
        }
    }
}

/// A file's lines, numbered from 1, without their line ends; blank lines are left out. Read in
/// chunks, so a file of a million devices is never in memory whole.
struct JSONLines: Sequence {
    let path: String

    func makeIterator() -> Iterator { Iterator(handle: FileHandle(forReadingAtPath: path)) }

    struct Iterator: IteratorProtocol {
        let handle: FileHandle?
        var buffer: [UInt8] = []
        var start = 0
        var number = 0
        var ended = false
        /// Past this without a line end, the rest of the file is one line too long to take.
        static let longestLine = 16 << 20

        mutating func next() -> (Int, [UInt8])? {
            while true {
                if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    var line = Array(buffer[start..<newline])
                    start = newline + 1
                    number += 1
                    if line.last == UInt8(ascii: "\r") { line.removeLast() }
                    if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                    return (number, line)
                }
                // A line longer than any body the API takes is handed over as it is, to be refused.
                if buffer.count - start > Self.longestLine {
                    let line = Array(buffer[start...])
                    (buffer, start, ended) = ([], 0, true)
                    number += 1
                    return (number, line)
                }
                if ended {
                    guard start < buffer.count else { return nil }
                    var line = Array(buffer[start...])
                    start = buffer.count
                    number += 1
                    if line.last == UInt8(ascii: "\r") { line.removeLast() }
                    return line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) ? nil : (number, line)
                }
                buffer.removeFirst(start)
                start = 0
                if let chunk = try? handle?.read(upToCount: 1 << 20), !chunk.isEmpty {
                    buffer += chunk
                } else {
                    ended = true
                }
            }
        }
    }
}
