import Foundation
import PackagePlugin

/// Writes `BuildInfo.swift` into the target: the commit the package is built from (`git rev-parse`,
/// or `unknown` outside a git checkout), so `herald version` names it. The file is rewritten only
/// when the commit changes, so an unchanged tree does not recompile.
@main
struct BuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = #"""
            set -u
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
            mkdir -p "$2"
            text="/// Written by the BuildInfo plugin.
            enum BuildInfo { static let commit = \"$commit\" }"
            [ "$(cat "$2/BuildInfo.swift" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" > "$2/BuildInfo.swift"
            """#
        return [
            .prebuildCommand(
                displayName: "BuildInfo: the commit herald is built from",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "buildinfo", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
