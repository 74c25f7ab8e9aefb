// Apps import HeraldKit alone: the cipher and the protocol formats come with it.
@_exported import KasiaCrypto
@_exported import KasiaProtocol
