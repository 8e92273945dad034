/// runner's own version; part of every fingerprint, so a release that renders differently re-runs items.
public enum RunnerVersion {
    public static let string = "0.1.0"
}
