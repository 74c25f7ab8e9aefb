/// Herald's release version (Semantic Versioning; `CHANGELOG.md` says what each one changed).
public enum HeraldVersion {
    public static let current = "0.1.0"
}
