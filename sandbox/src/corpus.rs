//! The small built-in corpus the AI endpoints answer from: a handful of company documents,
//! each split into paragraph chunks. Files created through the activity API with content
//! join it.

use super::dates::{DAY_MS, midnight_ms};

/// A built-in document.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinDocument {
    /// Folder path.
    pub folder: &'static str,
    /// File name.
    pub filename: &'static str,
    /// Last modification date (year, month, day).
    pub date: (i64, u32, u32),
    /// Paragraphs; each becomes one chunk.
    pub paragraphs: &'static [&'static str],
}

impl BuiltinDocument {
    /// Full path of the file.
    pub fn path(&self) -> String {
        format!("{}/{}", self.folder, self.filename)
    }

    /// Modification time, epoch milliseconds (noon UTC).
    pub fn modified_ms(&self) -> i64 {
        midnight_ms(self.date) + DAY_MS / 2
    }

    /// The text: paragraphs separated by blank lines.
    pub fn text(&self) -> String {
        self.paragraphs.join("\n\n")
    }
}

/// Splits text into chunks at blank lines (at least one chunk for non-empty text).
pub fn chunks_of(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The first sentence of a text (up to and including the first `.`, `!` or `?`).
pub fn first_sentence(text: &str) -> &str {
    let end = text
        .char_indices()
        .find(|(i, c)| {
            matches!(c, '.' | '!' | '?')
                && text[i + c.len_utf8()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        })
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    &text[..end]
}

/// The built-in documents.
pub const DOCUMENTS: &[BuiltinDocument] = &[
    BuiltinDocument {
        folder: "/Company/Policies",
        filename: "information-security-policy.pdf",
        date: (2024, 9, 12),
        paragraphs: &[
            "The information security policy applies to every employee, contractor and service account. Access to customer data is granted on a need-to-know basis and reviewed every quarter by the data owner.",
            "Passwords must be at least 14 characters long and are never reused across systems. Multi-factor authentication is mandatory for the content platform, email and the VPN.",
            "Security incidents, lost laptops and suspicious emails are reported to the security team within one hour at security@example.com. The incident response runbook describes the next steps.",
            "Confidential documents are shared only through the content platform with expiring links. Public links to confidential folders are disabled by the administrator.",
        ],
    },
    BuiltinDocument {
        folder: "/Company/Policies",
        filename: "travel-and-expenses.docx",
        date: (2024, 11, 4),
        paragraphs: &[
            "Business travel must be approved by the line manager before booking. Economy class is the default for flights shorter than six hours.",
            "Hotel costs are reimbursed up to 180 euros per night in major cities and 120 euros elsewhere. Meals are covered by a daily allowance of 45 euros.",
            "Expense reports are submitted within 30 days of the trip with scanned receipts attached. Reimbursement is paid with the next monthly salary.",
        ],
    },
    BuiltinDocument {
        folder: "/Company/Policies",
        filename: "data-retention-policy.pdf",
        date: (2025, 1, 20),
        paragraphs: &[
            "Customer contracts are retained for ten years after the end of the contract. Invoices and accounting records are kept for seven years.",
            "Audit logs of the content platform are exported monthly and retained for two years. Deleted files stay in the trash for 30 days before they are purged.",
            "Personal data of former employees is deleted one year after they leave, unless a legal hold applies.",
        ],
    },
    BuiltinDocument {
        folder: "/Company/HR",
        filename: "onboarding-guide.docx",
        date: (2024, 6, 3),
        paragraphs: &[
            "Welcome to the team! On your first day you receive a laptop, a badge and an account on the content platform. Your manager schedules an introduction meeting with the team.",
            "During the first week you complete the security awareness training and read the information security policy. The HR team sets up payroll and benefits.",
            "Your onboarding buddy answers questions about tools, meetings and the office. After 90 days you have a review with your manager.",
        ],
    },
    BuiltinDocument {
        folder: "/Engineering",
        filename: "incident-response-runbook.md",
        date: (2024, 10, 28),
        paragraphs: &[
            "When an alert fires, the on-call engineer acknowledges it within 15 minutes and opens an incident channel. Severity 1 incidents page the incident commander immediately.",
            "The incident commander assigns roles: communications lead, operations lead and scribe. Customer-facing status updates are posted every 30 minutes.",
            "After recovery, a blameless postmortem is written within five business days. Action items are tracked in the engineering backlog with an owner and a due date.",
        ],
    },
    BuiltinDocument {
        folder: "/Engineering",
        filename: "api-integration-guide.md",
        date: (2025, 2, 10),
        paragraphs: &[
            "The public API is reached under the /pubapi path of the customer domain. Every request carries an OAuth bearer token; tokens are cached and reused.",
            "Each token may make 1,000 general API calls per day and 2 per second. AI endpoints allow 100 calls per day. Throttled calls carry a Retry-After header.",
            "Webhooks push file system events to an HTTPS endpoint. Failed deliveries are retried after one minute, ten minutes and one hour before the webhook is disabled.",
            "The events API is polled with a cursor no more often than every five minutes. Audit report jobs are polled every two minutes until the report is ready.",
        ],
    },
    BuiltinDocument {
        folder: "/Finance",
        filename: "q3-2024-financial-report.xlsx",
        date: (2024, 10, 15),
        paragraphs: &[
            "Revenue in the third quarter of 2024 grew 18 percent year over year to 42 million euros. Subscription revenue made up 86 percent of the total.",
            "Operating expenses rose 9 percent, driven by hiring in engineering and sales. The operating margin improved to 14 percent.",
            "Cash and equivalents at the end of the quarter were 65 million euros. The forecast for the full year was raised to 160 million euros of revenue.",
        ],
    },
    BuiltinDocument {
        folder: "/Product",
        filename: "roadmap-2025.pptx",
        date: (2025, 1, 8),
        paragraphs: &[
            "The 2025 roadmap focuses on AI assistants, knowledge bases and faster search. Hybrid search combines semantic similarity with keyword matching.",
            "In the first half of the year the assistant gains citations and tool calls. Knowledge bases can be built from any set of folders.",
            "In the second half of the year the copilot endpoint is retired in favour of the asynchronous assistant. Mobile apps get offline access to knowledge bases.",
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_blank_lines() {
        assert_eq!(chunks_of("a\n\n\n\nb  \n\n"), vec!["a", "b"]);
        assert!(chunks_of("  ").is_empty());
    }

    #[test]
    fn first_sentence_stops_at_the_first_full_stop() {
        assert_eq!(first_sentence("One 1.5 two. Three."), "One 1.5 two.");
        assert_eq!(first_sentence("No stop"), "No stop");
    }

    #[test]
    fn every_document_has_chunks_and_a_path() {
        for doc in DOCUMENTS {
            assert!(!chunks_of(&doc.text()).is_empty());
            assert!(doc.path().starts_with('/'));
        }
    }
}
