// Kaspa addresses are part of HeraldCore's vocabulary (watch keys, routes): re-export them.
@_exported import KasiaProtocol
