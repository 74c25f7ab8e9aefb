public import Foundation
public import HeraldPushCore
public import _CryptoExtras

/// A Firebase service account: the JSON file Google's console hands out. Only the fields the
/// OAuth grant needs are read.
public struct FCMServiceAccount: Sendable {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyID: String?
    /// Where the signed grant is exchanged for an access token (normally Google's OAuth endpoint).
    public let tokenURI: URL
    let privateKey: _RSA.Signing.PrivateKey

    /// The scope FCM's send API needs.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The grant's audience. Google documents it as always this URL, and its own client
    /// (google-auth) sends it whatever the file's `token_uri` says; for Google's files they agree.
    public static let grantAudience = "https://oauth2.googleapis.com/token"
    /// The longest lifetime Google accepts for a grant (`exp` - `iat`).
    public static let grantLifetime: TimeInterval = 3600

    private struct File: Decodable {
        var type: String?
        var project_id: String?
        var private_key_id: String?
        var private_key: String?
        var client_email: String?
        var token_uri: String?
    }

    /// Reads a service-account file's JSON. Throws `HeraldConfigurationError` naming the field at fault.
    public init(json: Data) throws(HeraldConfigurationError) {
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw HeraldConfigurationError(field: "credentials", message: "is not a service-account JSON object")
        }
        if let type = file.type, type != "service_account" {
            throw HeraldConfigurationError(field: "type", message: "is \(type), not service_account")
        }
        guard let project = file.project_id, Self.isProjectID(project) else {
            throw HeraldConfigurationError(field: "project_id", message: "is missing or not a Firebase project id (letters, digits, -)")
        }
        guard let email = file.client_email, !email.isEmpty else { throw HeraldConfigurationError(field: "client_email", message: "is missing") }
        guard let uri = file.token_uri.flatMap(URL.init(string:)), uri.scheme == "https" || uri.scheme == "http", uri.host != nil else {
            throw HeraldConfigurationError(field: "token_uri", message: "is not an https URL")
        }
        guard let pem = file.private_key, let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem), key.keySizeInBits >= 2048 else {
            throw HeraldConfigurationError(field: "private_key", message: "is not an RSA private key of at least 2048 bits (PEM)")
        }
        self.projectID = project
        self.clientEmail = email
        self.privateKeyID = file.private_key_id
        self.tokenURI = uri
        self.privateKey = key
    }

    /// Reads a service-account file.
    public init(contentsOfFile path: String) throws(HeraldConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldConfigurationError(field: "credentials", message: "\(path) is not readable")
        }
        try self.init(json: data)
    }

    /// The RS256 JWT grant (RFC 7523) exchanged at `tokenURI`: `iss` the account, `scope` FCM,
    /// `aud` Google's token endpoint, one hour from `issuedAt`.
    public func makeGrant(issuedAt: Date) -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyID { header["kid"] = privateKeyID }
        let claims = GrantClaims(
            iss: clientEmail, scope: Self.messagingScope, aud: Self.grantAudience, iat: iat, exp: iat + Int64(Self.grantLifetime))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding string dictionaries and a struct of strings and integers cannot fail.
        let signingInput = Base64URL.encode(Array(try! encoder.encode(header))) + "." + Base64URL.encode(Array(try! encoder.encode(claims)))
        // PKCS#1 v1.5 with SHA-256 over in-memory bytes cannot fail for a valid key.
        let signature = try! privateKey.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The form body of the token request.
    public func tokenRequestBody(issuedAt: Date) -> String {
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + makeGrant(issuedAt: issuedAt)
    }

    /// Whether `text` can be a Firebase project id: letters, digits and `-` (it goes into a URL path).
    public static func isProjectID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    /// The public half, for whoever verifies grants (the simulator).
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// A new account with a fresh 2048-bit key (tests): the JSON file Google would hand out,
    /// pointing its `token_uri` at `tokenURI`.
    public static func generateFile(projectID: String, clientEmail: String, tokenURI: URL) throws -> Data {
        try file(privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048), projectID: projectID, clientEmail: clientEmail, tokenURI: tokenURI)
    }

    /// The service-account JSON file for `privateKey`, as Google's console writes it.
    public static func file(privateKey: _RSA.Signing.PrivateKey, projectID: String, clientEmail: String, tokenURI: URL) throws -> Data {
        let file: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
            "private_key": privateKey.pkcs8PEMRepresentation + "\n", "client_email": clientEmail, "client_id": "1",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI.absoluteString,
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return try encoder.encode(file)
    }
}

/// The claims of a JWT grant.
public struct GrantClaims: Codable, Sendable, Hashable {
    public var iss: String
    public var scope: String
    public var aud: String
    public var iat: Int64
    public var exp: Int64
}


/// An OAuth access token and when it expires.
public struct FCMAccessToken: Sendable, Hashable {
    public let value: String
    public let expiresAt: Date

    public init(value: String, expiresAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
    }
}

/// FCM's use of the credential ledger: one access token per service account (`fcm`,
/// `<client_email>`), so that N instances exchange no more than one grant.
extension CredentialLedger {
    /// In one critical section across instances: the account's shared token while it is valid
    /// for more than `refreshMargin` and is not `rejected`; else `exchange()`'s, stored and
    /// returned. `exchanged` says which.
    public func accessToken(
        account: String, now: Date, refreshMargin: Duration, rejected: String?,
        exchange: @escaping @Sendable () async throws -> FCMAccessToken
    ) async throws -> (token: FCMAccessToken, exchanged: Bool) {
        let (credential, made) = try await credential(
            service: "fcm", key: account,
            keep: { stored in
                guard let expiresAt = stored.expiresAt else { return false }
                return stored.token != rejected && expiresAt.timeIntervalSince(now) > refreshMargin.seconds
            },
            make: {
                let token = try await exchange()
                return LedgerCredential(token: token.value, issuedAt: now, expiresAt: token.expiresAt)
            })
        return (FCMAccessToken(value: credential.token, expiresAt: credential.expiresAt ?? now), made)
    }
}
