// Test bodies written once and run on every device, in candle's `test_device!` manner: a
// body takes `&Device`; each test binary declares it as a test on its own device (the CPU
// binaries on the CPU, the `gpu` binary on the GPU), so the CPU and the GPU are held to the
// same assertions.

/// `test_device!(device; module::{a, b})` declares `#[test] fn a()` calling `module::a(&device)`,
/// and the same for `b`.
macro_rules! test_device {
    ($dev:expr; $m:ident :: { $($body:ident),* $(,)? }) => {
        $(
            #[test]
            fn $body() {
                $m::$body(&$dev)
            }
        )*
    };
}
