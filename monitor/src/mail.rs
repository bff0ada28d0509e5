//! Email delivery of queued alerts through lettre over SMTP. The outbox is
//! drained by `Monitor::deliver_once`; this module only knows how to send
//! one message, so an SMTP outage costs retries, never alerts.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use robotsgate_config::{Email, Security};

use crate::store::AlertRow;

/// Why an email could not be built or sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// An address in `email` is malformed.
    #[error("email.{key}: `{value}` is not an email address: {reason}")]
    Address {
        /// The key at fault.
        key: &'static str,
        /// The value.
        value: String,
        /// The parser's reason.
        reason: String,
    },
    /// The SMTP transport could not be set up.
    #[error("cannot set up SMTP to {host}: {reason}")]
    Transport {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// Building or sending the message failed; worth trying again.
    #[error("sending mail failed: {0}")]
    Send(String),
    /// The server refused the message for good (an SMTP 5xx reply, RFC
    /// 5321 §4.2.1): the same message would be refused again, so it is
    /// not retried.
    #[error("the mail server refused the message (permanent, not retried): {0}")]
    Refused(String),
}

impl MailError {
    /// Whether sending again cannot succeed.
    pub fn is_permanent(&self) -> bool {
        matches!(self, MailError::Refused(_))
    }
}

/// Sends alerts to the configured recipients.
#[derive(Clone, Debug)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    to: Vec<Mailbox>,
}

fn mailbox(key: &'static str, value: &str) -> Result<Mailbox, MailError> {
    value.parse().map_err(|e: lettre::address::AddressError| MailError::Address {
        key,
        value: value.to_string(),
        reason: e.to_string(),
    })
}

/// Longest wait on any one SMTP read or write.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest one send may take, start to finish. The claim on an alert
/// outlives this (see `Monitor`'s `ALERT_LEASE`), so a send that is cut
/// off is retried only after it has surely stopped.
pub const SEND_LIMIT: Duration = Duration::from_secs(25);

impl Mailer {
    /// Builds the transport. Credentials, if any, come from
    /// `ROBOTSGATE_SMTP_USER` and `ROBOTSGATE_SMTP_PASSWORD`.
    pub fn new(email: &Email) -> Result<Mailer, MailError> {
        let setup = |e: lettre::transport::smtp::Error| MailError::Transport {
            host: email.host.clone(),
            reason: e.to_string(),
        };
        let builder = match email.security {
            Security::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&email.host),
            Security::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&email.host).map_err(setup)?,
            Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&email.host).map_err(setup)?,
        };
        let mut builder = builder.port(email.port).timeout(Some(SOCKET_TIMEOUT));
        if let (Some(ca), Security::Starttls | Security::Tls) = (&email.ca_file, email.security) {
            let bad_ca = |reason: String| MailError::Transport {
                host: email.host.clone(),
                reason: format!("email.ca_file {}: {reason}", ca.display()),
            };
            let pem = std::fs::read(ca).map_err(|e| bad_ca(e.to_string()))?;
            let cert = Certificate::from_pem(&pem).map_err(|e| bad_ca(e.to_string()))?;
            let params = TlsParameters::builder(email.host.clone())
                .add_root_certificate(cert)
                .build()
                .map_err(|e| bad_ca(e.to_string()))?;
            // The same security as without the CA, only with more trust.
            builder = builder.tls(match email.security {
                Security::Tls => Tls::Wrapper(params),
                _ => Tls::Required(params),
            });
        }
        if let (Ok(user), Ok(password)) =
            (std::env::var("ROBOTSGATE_SMTP_USER"), std::env::var("ROBOTSGATE_SMTP_PASSWORD"))
        {
            builder = builder.credentials(Credentials::new(user, password));
        }
        let to = email.to.iter().map(|t| mailbox("to", t)).collect::<Result<_, _>>()?;
        Ok(Mailer { transport: builder.build(), from: mailbox("from", &email.from)?, to })
    }

    /// An alert's `Message-ID`: the same for every attempt at it, so a
    /// receiver that got a message whose acknowledgement was lost keeps
    /// one copy; unique per site and alert; on the sender's domain.
    pub fn message_id(&self, alert: &AlertRow) -> String {
        let site: String =
            alert.site.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
        format!("<alert-{}.{site}.robotsgate@{}>", alert.id, self.from.email.domain())
    }

    /// Sends one alert as a multipart text and HTML message.
    pub async fn send(&self, alert: &AlertRow) -> Result<(), MailError> {
        let mut builder =
            Message::builder().from(self.from.clone()).subject(&alert.subject).message_id(Some(self.message_id(alert)));
        for to in &self.to {
            builder = builder.to(to.clone());
        }
        let message = builder
            .multipart(MultiPart::alternative_plain_html(alert.body_text.clone(), alert.body_html.clone()))
            .map_err(|e| MailError::Send(e.to_string()))?;
        match tokio::time::timeout(SEND_LIMIT, self.transport.send(message)).await {
            Ok(Err(e)) if e.is_permanent() => Err(MailError::Refused(e.to_string())),
            Ok(sent) => sent.map(|_| ()).map_err(|e| MailError::Send(e.to_string())),
            Err(_) => Err(MailError::Send(format!("no answer within {} s", SEND_LIMIT.as_secs()))),
        }
    }
}
