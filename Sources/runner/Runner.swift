import ArgumentParser
import Foundation
import Support
import Model
import Keys
import Imaging
import Manifest
import Planning
import State
import Reporting
import Pipeline

@main
struct Runner: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runner",
        abstract: "Run a JSON image job: plan it, process it with libvips, resume it after any stop.",
        version: "\(RunnerVersion.string) (libvips \(VipsRuntime.version))",
        subcommands: [Run.self, Validate.self, Schema.self, Formats.self, PlanCommand.self, Status.self, Failed.self, Report.self, Unblock.self,
                      Prune.self, Worker.self],
        defaultSubcommand: Run.self
    )

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let word = arguments.first, let problem = unknownCommand(word) {
            printError(problem)
            Foundation.exit(ExitStatus.commandLine)
        }
        main(arguments)
    }

    /// `run` is the default command, so the first word may be a job file; but `runner stauts job.json`
    /// must not read `stauts` as one. A first word that is no command, no existing file and not
    /// written like a path (no `/` or `.`) is an unknown command.
    static func unknownCommand(_ word: String) -> String? {
        let commands = configuration.subcommands
        let names = Set(commands.map { $0._commandName } + ["help"])
        guard !word.hasPrefix("-"), !names.contains(word), !FileManager.default.fileExists(atPath: word),
              !word.contains("/"), !word.contains(".") else { return nil }
        let shown = commands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
        return Suggestion.unknown("command", word, known: shown) + ", and no file of that name exists"
    }
}

/// The job file every subcommand takes.
struct JobArgument: ParsableArguments {
    @Argument(help: "The job file (JSON).", completion: .file(extensions: ["json"]))
    var job: String

    /// Loads the job, or throws naming the exact problem (exit status 2).
    func load() throws -> Job {
        do {
            return try Job.load(path: job)
        } catch let error as JobFileError {
            throw JobFileFailure(path: job, error: error)
        }
    }
}

/// Which part of the job this process runs (`--shard K/N`, or the batch engine's environment).
struct ShardOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Run only shard K of N (0 <= K < N): the sources whose key hashes to K. Default: from JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID (Slurm).", valueName: "K/N"))
    var shard: String?

    @Option(help: ArgumentHelp("The shard count when the index comes from the environment (or RUNNER_SHARDS).", valueName: "N"))
    var shards: Int?

    func validate() throws {
        if let shards, shards < 1 { throw ValidationError("--shards must be at least 1") }
        do { _ = try resolved() } catch { throw ValidationError(error.description) }
    }

    func resolved() throws(Shard.Unresolved) -> Shard? {
        try Shard.resolve(flag: shard, shards: shards, environment: ProcessInfo.processInfo.environment)
    }

    /// `job` restricted to this process's shard, if it has one.
    func apply(to job: Job) throws -> Job {
        try resolved().map(job.sharded) ?? job
    }
}

/// A rejected job file: printed after its path, exit code 2.
struct JobFileFailure: Error, CustomStringConvertible {
    let path: String
    let error: JobFileError
    var description: String { error.described(in: path) }
}

extension Runner {
    /// Maps an error that escaped a subcommand to the documented exit codes.
    static func exit(for error: any Error) -> Never {
        switch error {
        case let failure as JobFileFailure:
            printError(failure.description)
            Foundation.exit(ExitStatus.jobFile)
        case let failure as JobFileError:
            printError(failure.description)
            Foundation.exit(ExitStatus.jobFile)
        case let held as RunLock.Held:
            printError(held.description)
            Foundation.exit(ExitStatus.locked)
        case let unavailable as RunLock.Unavailable:
            printError(unavailable.description)
            Foundation.exit(ExitStatus.stateUnavailable)
        case let database as StateDatabaseError:
            printError(database.description)
            Foundation.exit(database.exitCode)
        default:
            Runner.exit(withError: error)
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data("runner: \(text)\n".utf8))
    }
}
