import Foundation
import HeraldKit
import Testing

/// Every transition of the reliability and polling rules of docs/heraldkit.md, on a test clock.
@Suite struct PushReliabilityTrackerTests {
    @Test func aPushInsideTheGraceIsAHitAndMakesTheChannelReliable() {
        let clock = ManualClock()
        var tracker = PushReliabilityTracker(clock: clock)
        #expect(tracker.state == .unknown)
        let r1 = tracker.observedTransaction("a")
        #expect(r1 == [])
        clock.advance(by: 59)
        let r2 = tracker.receivedPush(txID: "a")
        #expect(r2 == [])
        #expect(tracker.state == .reliable)
        #expect(tracker.awaitingPush.isEmpty)
    }

    @Test func aPushBeforeTheTransactionIsSeenCountsAsAHit() {
        let clock = ManualClock()
        var tracker = PushReliabilityTracker(clock: clock)
        let r3 = tracker.receivedPush(txID: "a")
        #expect(r3 == [])
        clock.advance(by: 5)
        let r4 = tracker.observedTransaction("a")
        #expect(r4 == [])
        #expect(tracker.state == .reliable)
        clock.advance(by: 120)
        #expect(tracker.evaluate() == [])  // nothing left waiting: no miss
        #expect(tracker.consecutiveMisses == 0)
    }

    @Test func threeConsecutiveMissesAfterTheGraceMakeItUnreliable() {
        let clock = ManualClock()
        var tracker = PushReliabilityTracker(clock: clock)
        _ = tracker.observedTransaction("a")
        _ = tracker.receivedPush(txID: "a")
        #expect(tracker.state == .reliable)
        for (i, tx) in ["b", "c", "d"].enumerated() {
            _ = tracker.observedTransaction(tx)
            clock.advance(by: 59.9)
            let r5 = tracker.evaluate()
            #expect(r5 == [], "still inside the grace")
            clock.advance(by: 0.1)
            let actions = tracker.evaluate()
            #expect(tracker.consecutiveMisses == i + 1)
            if i < 2 {
                #expect(actions == [])
                #expect(tracker.state == .reliable)
            } else {
                #expect(actions == [.reregister, .catchUp])
                #expect(tracker.state == .unreliable)
            }
        }
        // Further misses do not re-register again and again.
        _ = tracker.observedTransaction("e")
        clock.advance(by: 60)
        let r6 = tracker.evaluate()
        #expect(r6 == [])
        // The first hit makes it reliable again and resets the count.
        _ = tracker.observedTransaction("f")
        let r7 = tracker.receivedPush(txID: "f")
        #expect(r7 == [])
        #expect(tracker.state == .reliable)
        #expect(tracker.consecutiveMisses == 0)
    }

    @Test func aHitBetweenMissesResetsTheCount() {
        let clock = ManualClock()
        var tracker = PushReliabilityTracker(clock: clock)
        for tx in ["a", "b"] {
            _ = tracker.observedTransaction(tx)
            clock.advance(by: 61)
            _ = tracker.evaluate()
        }
        #expect(tracker.consecutiveMisses == 2)
        _ = tracker.observedTransaction("c")
        _ = tracker.receivedPush(txID: "c")
        _ = tracker.observedTransaction("d")
        clock.advance(by: 61)
        let r8 = tracker.evaluate()
        #expect(r8 == [])
        #expect(tracker.consecutiveMisses == 1)
        #expect(tracker.state == .reliable)
    }

    @Test func catchUpsAreDebouncedTenMinutesOnlyWhileReliable() {
        let clock = ManualClock()
        var tracker = PushReliabilityTracker(clock: clock)
        // Unknown: every app-active catches up.
        let r9 = tracker.shouldCatchUp(.restart)
        #expect(r9)
        let r10 = tracker.shouldCatchUp(.appActive)
        #expect(r10)
        _ = tracker.observedTransaction("a")
        _ = tracker.receivedPush(txID: "a")
        #expect(tracker.state == .reliable)
        let r11 = tracker.shouldCatchUp(.appActive)
        #expect(!r11)
        clock.advance(by: 599)
        let r12 = tracker.shouldCatchUp(.restart)
        #expect(!r12)
        clock.advance(by: 1)
        let r13 = tracker.shouldCatchUp(.appActive)
        #expect(r13)
        let r14 = tracker.shouldCatchUp(.appActive)
        #expect(!r14)
        // Unreliable: no debounce.
        for tx in ["b", "c", "d"] {
            _ = tracker.observedTransaction(tx)
            clock.advance(by: 60)
            _ = tracker.evaluate()
        }
        #expect(tracker.state == .unreliable)
        let r15 = tracker.shouldCatchUp(.appActive)
        #expect(r15)
        let r16 = tracker.shouldCatchUp(.appActive)
        #expect(r16)
    }
}

@Suite struct AdaptivePollingPolicyTests {
    @Test func fiveSecondsUntilPushesArriveThenThirty() {
        let clock = ManualClock()
        var policy = AdaptivePollingPolicy(clock: clock, notificationsEnabled: true)
        #expect(policy.interval == 5)
        #expect(policy.isDue)
        policy.polled(foundMessagesWithoutPush: false)
        #expect(!policy.isDue)
        clock.advance(by: 5)
        #expect(policy.isDue)
        policy.polled(foundMessagesWithoutPush: false)
        // A push for another conversation changes nothing.
        let r17 = policy.pushReceived(matchesThisConversation: false)
        #expect(!r17)
        #expect(policy.interval == 5 && !policy.isDue)
        // A push for this one: poll now, then every 30 s.
        let r18 = policy.pushReceived(matchesThisConversation: true)
        #expect(r18)
        #expect(policy.isDue)
        #expect(policy.interval == 30)
        policy.polled(foundMessagesWithoutPush: false)
        clock.advance(by: 29)
        #expect(!policy.isDue)
        clock.advance(by: 1)
        #expect(policy.isDue)
    }

    @Test func messagesNoPushAnnouncedFallBackToFiveSeconds() {
        let clock = ManualClock()
        var policy = AdaptivePollingPolicy(clock: clock, notificationsEnabled: true)
        _ = policy.pushReceived(matchesThisConversation: true)
        policy.polled(foundMessagesWithoutPush: false)
        #expect(policy.interval == 30)
        clock.advance(by: 30)
        policy.polled(foundMessagesWithoutPush: true)
        #expect(policy.interval == 5)
        #expect(policy.nextPoll == clock.now + 5)
    }

    @Test func notificationsTurnedOffFallBackAtOnce() {
        let clock = ManualClock()
        var policy = AdaptivePollingPolicy(clock: clock, notificationsEnabled: true)
        _ = policy.pushReceived(matchesThisConversation: true)
        policy.polled(foundMessagesWithoutPush: false)
        #expect(policy.nextPoll == clock.now + 30)
        policy.appResumed(notificationsEnabled: false)
        #expect(policy.interval == 5)
        #expect(policy.nextPoll == clock.now + 5)
        // With notifications off, a push (delivered silently anyway) polls but keeps 5 s.
        let r19 = policy.pushReceived(matchesThisConversation: true)
        #expect(r19)
        #expect(policy.interval == 5)
        // Turned back on: 30 s again only once a push proves it.
        policy.appResumed(notificationsEnabled: true)
        #expect(policy.interval == 5)
        _ = policy.pushReceived(matchesThisConversation: true)
        #expect(policy.interval == 30)
    }
}
