//! What Pingora asks of a client stream beyond reading and writing (its id,
//! TLS state, timing, digests, peek), forwarded to the stream a wrapper
//! holds in its `inner` field. Each wrapper of a `Stream` (`deadline`,
//! `coalesce`) changes only how bytes move.

/// Implements Pingora's stream traits for `$wrapper` by forwarding each to
/// `self.inner`, a `pingora::protocols::Stream`.
macro_rules! forward_stream_traits {
    ($wrapper:ty) => {
        #[async_trait::async_trait]
        impl pingora::protocols::Shutdown for $wrapper {
            async fn shutdown(&mut self) {
                self.inner.shutdown().await;
            }
        }

        impl pingora::protocols::UniqueID for $wrapper {
            fn id(&self) -> pingora::protocols::UniqueIDType {
                self.inner.id()
            }
        }

        impl pingora::protocols::Ssl for $wrapper {
            fn get_ssl(&self) -> Option<&pingora::protocols::tls::TlsRef> {
                self.inner.get_ssl()
            }
            fn get_ssl_digest(&self) -> Option<std::sync::Arc<pingora::protocols::tls::SslDigest>> {
                self.inner.get_ssl_digest()
            }
            fn selected_alpn_proto(&self) -> Option<pingora::protocols::ALPN> {
                self.inner.selected_alpn_proto()
            }
        }

        impl pingora::protocols::GetTimingDigest for $wrapper {
            fn get_timing_digest(&self) -> Vec<Option<pingora::protocols::TimingDigest>> {
                self.inner.get_timing_digest()
            }
            fn get_read_pending_time(&self) -> std::time::Duration {
                self.inner.get_read_pending_time()
            }
            fn get_write_pending_time(&self) -> std::time::Duration {
                self.inner.get_write_pending_time()
            }
        }

        impl pingora::protocols::GetProxyDigest for $wrapper {
            fn get_proxy_digest(&self) -> Option<std::sync::Arc<pingora::protocols::raw_connect::ProxyDigest>> {
                self.inner.get_proxy_digest()
            }
            fn set_proxy_digest(&mut self, digest: pingora::protocols::raw_connect::ProxyDigest) {
                self.inner.set_proxy_digest(digest);
            }
        }

        impl pingora::protocols::GetSocketDigest for $wrapper {
            fn get_socket_digest(&self) -> Option<std::sync::Arc<pingora::protocols::SocketDigest>> {
                self.inner.get_socket_digest()
            }
            fn set_socket_digest(&mut self, digest: pingora::protocols::SocketDigest) {
                self.inner.set_socket_digest(digest);
            }
        }

        #[async_trait::async_trait]
        impl pingora::protocols::Peek for $wrapper {
            async fn try_peek(&mut self, buf: &mut [u8]) -> std::io::Result<bool> {
                self.inner.try_peek(buf).await
            }
        }
    };
}

pub(crate) use forward_stream_traits;
