import Foundation
import HeraldKit
import UserNotifications

/// The app's half: registration with Herald, the shared store, and push reliability.
actor PushNotificationManager {
    let herald: HeraldClient
    let store: SharedStore
    let cipher: KasiaCipher
    private var deviceToken: String?
    private var reliability = PushReliabilityTracker()

    init(herald: HeraldClient, sharedStoreDirectory: URL, curve: any Secp256k1Curve) {
        self.herald = herald
        self.store = try! SharedStore(directory: sharedStoreDirectory)
        self.cipher = KasiaCipher(curve: curve)
    }

    /// The wallet's address and the contacts, as the app knows them.
    func watchSet() throws -> WatchSet {
        var builder = WatchSetBuilder()
        builder.addOwnAddress(Wallet.current.address)
        for contact in Wallet.current.contacts {
            // Their alias for this conversation, once the handshake told us: only those messages.
            builder.addContact(contact.address, aliases: contact.theirAlias.map { [$0] } ?? [])
        }
        return try builder.build()
    }

    func deviceTokenChanged(_ token: String) async {
        deviceToken = token
        await register()
    }

    func register() async {
        guard let deviceToken else { return }
        do {
            // The token's APNs environment is this build's (a debug build's is the sandbox, an App
            // Store build's production): HeraldKit reads it from the embedded provisioning profile.
            // An app that knows better says so: `environment: .production` or `.sandbox`.
            try await herald.register(deviceToken: deviceToken, watchSet: watchSet())
            try store.setContacts(Wallet.current.contacts.map { Contact(address: $0.address, name: $0.name) })
        } catch {
            NSLog("[Push] registration failed: %@", String(describing: error))
        }
    }

    /// Contacts changed: update the watch set (re-register if Herald forgot the device).
    func contactsChanged() async {
        guard let deviceToken else { return }
        do {
            try await herald.update(deviceToken: deviceToken, watchSet: watchSet())
            try store.setContacts(Wallet.current.contacts.map { Contact(address: $0.address, name: $0.name) })
        } catch let error as HeraldClientError where error.isNotRegistered {
            await register()
        } catch {
            NSLog("[Push] update failed: %@", String(describing: error))
        }
    }

    func received(_ push: HeraldPush) async {
        guard case .kasia(let kasia) = push else { return }
        await perform(reliability.receivedPush(txID: kasia.txID))
    }

    /// "Mark as Read" on a notification (or the conversation opened): its notifications leave
    /// this phone's notification centre (they are grouped by it: HeraldKit's thread is the
    /// conversation), and Herald tells this wallet's other devices to take them away too — the
    /// marker signed with the wallet's key, as the app's `wallet` policy asks.
    func markRead(_ conversation: String) async {
        let center = UNUserNotificationCenter.current()
        let delivered = await center.deliveredNotifications()
        center.removeDeliveredNotifications(withIdentifiers: delivered.filter { $0.request.content.threadIdentifier == conversation }.map(\.request.identifier))
        Wallet.shared.markRead(conversation: conversation)
        guard let deviceToken else { return }
        do {
            // The position: the DAA score of the last message read (Kasia's pushes carry theirs).
            try await herald.markRead(
                deviceToken: deviceToken, conversation: conversation, upTo: String(Wallet.shared.lastReadDAAScore(in: conversation)),
                address: Wallet.current.address, ownership: AddressOwnership(privateKey: Wallet.current.privateKey, signer: P256KCurve()))
        } catch {
            NSLog("[Push] read marker failed: %@", String(describing: error))
        }
    }

    /// A background push with dismissals (the user read a conversation on another device):
    /// remove what they cover and set the badge to what is left.
    func applyDismissals(_ dismissals: [Dismissal]) async {
        guard !dismissals.isEmpty else { return }
        let center = UNUserNotificationCenter.current()
        let delivered = await center.deliveredNotifications().map {
            DeliveredNotification(identifier: $0.request.identifier, userInfo: $0.request.content.userInfo)
        }
        let plan = DismissalPlanner(contacts: (try? store.contents().contacts) ?? []).plan(dismissals, delivered: delivered)
        center.removeDeliveredNotifications(withIdentifiers: plan.remove)
        try? await center.setBadgeCount(plan.badge)
    }

    /// The UTXO subscription saw an incoming Kasia transaction: its push should follow.
    func sawIncomingTransaction(txID: String) async {
        await perform(reliability.observedTransaction(txID))
    }

    func appBecameActive(reason: PushReliabilityTracker.CatchUpReason) async {
        await perform(reliability.evaluate())
        // What the extension opened or could not open while the app was away.
        if let messages = try? store.consumeMessages() { Wallet.current.insert(messages) }
        if let pending = try? store.contents().pendingFetches, !pending.isEmpty {
            let fetched = await Wallet.current.fetch(txIDs: pending.map(\.txID))
            try? store.removePendingFetches(txIDs: fetched)
        }
        if reliability.shouldCatchUp(reason) { await Wallet.current.catchUpSync() }
    }

    private func perform(_ actions: [PushReliabilityTracker.Action]) async {
        for action in actions {
            switch action {
            case .reregister: await register()
            case .catchUp: await Wallet.current.catchUpSync()
            }
        }
    }
}
