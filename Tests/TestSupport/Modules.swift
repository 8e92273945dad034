// Every stage of the library, for the tests: they check behaviour across stages, and see each
// stage's `package` declarations without `@testable`.
@_exported import Support
@_exported import Model
@_exported import Keys
@_exported import Imaging
@_exported import JobFile
@_exported import Planning
@_exported import State
@_exported import Output
@_exported import Reporting
@_exported import Loading
@_exported import ObjectStore
@_exported import Processing
@_exported import Scheduling
@_exported import Pipeline
