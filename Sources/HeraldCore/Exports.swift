// Kaspa addresses are part of HeraldCore's vocabulary (watch keys, routes): re-export them.
@_exported import KasiaProtocol
// A Web Push subscription's endpoint and keys are a device's token.
@_exported import HeraldWebPushCore
