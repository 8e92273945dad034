import ArgumentParser
import Foundation
import Support
import Model
import Keys
import Imaging
import JobFile
import Reporting
import Pipeline

@main
struct Runner: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runner",
        abstract: "Run a JSON image job: plan it, process it with libvips, resume it after any stop.",
        version: "\(RunnerVersion.string) (libvips \(VipsRuntime.version))",
        subcommands: [Run.self, Validate.self, Schema.self, Formats.self, PlanCommand.self, PreviewCommand.self, Status.self, Failed.self,
                      Report.self, Duplicates.self, ManifestCommand.self, Compare.self, Unblock.self, Prune.self, Migrate.self, Worker.self],
        defaultSubcommand: Run.self
    )

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let word = arguments.first, let problem = unknownCommand(word) {
            printError(problem)
            Foundation.exit(ExitStatus.commandLine)
        }
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            finish(with: error)
        }
    }

    /// ArgumentParser's `exit(withError:)`, but an error written to stderr starts with the time
    /// off a terminal, as every other line a run writes there does.
    static func finish(with error: any Error) -> Never {
        let text = fullMessage(for: error)
        let code = exitCode(for: error)
        if !text.isEmpty {
            if code == .success { print(text) } else { Reporter.writeLog(text) }
        }
        Foundation.exit(code.rawValue)
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

    /// Loads the job and runs `body` with it. A job-file error found once the file is read (while
    /// planning: a source folder that is missing, two items writing one path) is named after the
    /// job file like one found while reading it.
    func with<Result>(_ body: (Job) throws -> Result) throws -> Result {
        let loaded = try load()
        do {
            return try body(loaded)
        } catch let error as JobFileError {
            throw JobFileFailure(path: job, error: error.located(in: loaded.text))
        }
    }

    /// `with`, the job's state read where it is kept: a `stateBucket`'s copies, fetched read-only.
    func reading<Result>(_ body: (Job) throws -> Result) throws -> Result { try with { try JobRunner.readingState(of: $0, body) } }

    /// `with`, the job's state changed where it is kept: a `stateBucket`'s copies, leased, fetched and written back.
    func editing<Result>(_ body: (Job) throws -> Result) throws -> Result { try with { try JobRunner.editingState(of: $0, body) } }
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
struct JobFileFailure: ExitCoded, CustomStringConvertible {
    let path: String
    let error: JobFileError
    var exitCode: Int32 { ExitStatus.jobFile }
    var description: String { error.described(in: path) }
}

/// A subcommand whose errors end the process with the documented exit codes.
protocol RunnerCommand: ParsableCommand {
    func execute() throws
}

extension RunnerCommand {
    /// An error of the command's own exits with its documented code, else EX_SOFTWARE: never 1,
    /// which means "an item failed". ArgumentParser's end as `Runner.finish` says.
    func run() throws {
        do { try execute() } catch where !(error is ExitCode || error is CleanExit || error is ValidationError) {
            Runner.printError("\(error)")
            Foundation.exit(ExitStatus.code(for: error))
        }
    }
}

extension Runner {
    static func printError(_ text: String) { Reporter.writeLog("runner: \(text)") }
}
