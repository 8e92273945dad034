import ArgumentParser
import Foundation
import RunnerCore

@main
struct Runner: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runner",
        abstract: "Run a JSON image job: plan it, process it with libvips, resume it after any stop.",
        version: RunnerVersion.string,
        subcommands: [Run.self, Validate.self, PlanCommand.self, Status.self, Failed.self, Unblock.self, Prune.self, Worker.self],
        defaultSubcommand: Run.self
    )
}

/// The job file every subcommand takes.
struct JobArgument: ParsableArguments {
    @Argument(help: "The job file (JSON).", completion: .file(extensions: ["json"]))
    var job: String

    /// Loads the job, or exits 2 naming the exact problem.
    func load() throws -> Job {
        do {
            return try Job.load(path: job)
        } catch let error as JobFileError {
            throw JobFileFailure(path: job, error: error)
        }
    }
}

/// A rejected job file: printed with its location, exit code 2.
struct JobFileFailure: Error, CustomStringConvertible {
    let path: String
    let error: JobFileError
    var description: String { "\(path): \(error)" }
}

extension Runner {
    /// Maps an error that escaped a subcommand to the documented exit codes.
    static func exit(for error: any Error) -> Never {
        switch error {
        case let failure as JobFileFailure:
            printError(failure.description)
            Foundation.exit(ExitStatus.usage)
        case let failure as JobFileError:
            printError(failure.description)
            Foundation.exit(ExitStatus.usage)
        case let held as RunLock.Held:
            printError(held.description)
            Foundation.exit(ExitStatus.locked)
        default:
            Runner.exit(withError: error)
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data("runner: \(text)\n".utf8))
    }
}
