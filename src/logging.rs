//! The referee's own diagnostics (warnings, faults, and with `-v` each evaluation's timing)
//! through `tracing`, on stderr. The human progress lines stay on stdout and the event log
//! (OBSERVER-EVENTS.jsonl) is written by the daemon as before: neither goes through here.
//!
//! The level comes from `REFEREE_LOG` (env-filter syntax: `debug`, `referee::engine=trace`)
//! when it is set, else from `-q` (warnings and errors), nothing (info) or `-v` (debug; `-vv`
//! trace). Text lines read `referee: warning: …`, as the referee's messages always have; with
//! `--log-format json` each is one JSON object (`timestamp`, `level`, `message`, fields,
//! `target`, the current span).

use std::fmt;
use std::sync::OnceLock;

use anstyle::{AnsiColor, Style};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FmtSpan, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// The environment variable that sets the filter, overriding `-q`/`-v`.
pub const ENV: &str = "REFEREE_LOG";

/// How each diagnostic is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `referee: warning: …`, one line each.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

/// How much is said when `REFEREE_LOG` is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// `-q`: warnings and errors only.
    Quiet,
    /// Informational messages too.
    #[default]
    Normal,
    /// `-v`: debug, including a span with its timing per evaluation.
    Verbose,
    /// `-vv`: everything.
    Trace,
}

impl Verbosity {
    /// From the counts of `-q` and `-v` given.
    pub fn from_flags(quiet: bool, verbose: u8) -> Verbosity {
        match (quiet, verbose) {
            (true, _) => Verbosity::Quiet,
            (false, 0) => Verbosity::Normal,
            (false, 1) => Verbosity::Verbose,
            (false, _) => Verbosity::Trace,
        }
    }

    fn directive(self) -> &'static str {
        match self {
            Verbosity::Quiet => "warn",
            Verbosity::Normal => "info",
            Verbosity::Verbose => "debug",
            Verbosity::Trace => "trace",
        }
    }
}

/// The logging setup of one process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Config {
    /// Text or JSON.
    pub format: Format,
    /// The level when `REFEREE_LOG` is not set.
    pub verbosity: Verbosity,
    /// Colour the text format's labels (never JSON).
    pub color: bool,
}

static FORMAT: OnceLock<Format> = OnceLock::new();

/// Installs the process's subscriber, writing to stderr; `filter` is `REFEREE_LOG`'s value.
/// Only the first call in a process has an effect. A `REFEREE_LOG` that is not a valid filter
/// is said (a warning) and the `-q`/`-v` level is used instead.
pub fn init(cfg: &Config, filter: Option<&str>) {
    if FORMAT.set(cfg.format).is_err() {
        return;
    }
    let default = || EnvFilter::new(cfg.verbosity.directive());
    let (filter, bad) = match filter.map(str::trim).filter(|f| !f.is_empty()) {
        None => (default(), None),
        Some(f) => match EnvFilter::builder().parse(f) {
            Ok(parsed) => (parsed, None),
            Err(e) => (
                default(),
                Some(format!(
                    "{ENV}=`{f}` is not a valid filter ({e}); using `{}`",
                    cfg.verbosity.directive()
                )),
            ),
        },
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        // A span's end is logged with its busy and idle time (enabled from -v).
        .with_span_events(FmtSpan::CLOSE);
    // Another subscriber already installed (a test harness) keeps its place.
    let _ = match cfg.format {
        Format::Text => builder.with_ansi(cfg.color).event_format(Text).try_init(),
        Format::Json => builder
            .json()
            .with_ansi(false)
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    if let Some(bad) = bad {
        tracing::warn!("{bad}");
    }
}

/// The format set by [`init`] (text before it).
pub fn format() -> Format {
    FORMAT.get().copied().unwrap_or_default()
}

/// Says the error that ends the process: `referee: …` on stderr in text (whatever the filter),
/// one `ERROR` object in JSON.
pub fn fatal(err: &anyhow::Error) {
    match format() {
        Format::Text => eprintln!("referee: {err:#}"),
        Format::Json => tracing::error!("{err:#}"),
    }
}

/// `referee: LABEL: [span{fields}: ]message fields`: the referee's messages as they have
/// always read. Errors and info carry no label; spans are shown from debug on.
#[derive(Debug, Clone, Copy)]
struct Text;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = *event.metadata().level();
        let (label, color) = match level {
            Level::ERROR => ("", AnsiColor::Red),
            Level::WARN => ("warning", AnsiColor::Yellow),
            Level::INFO => ("", AnsiColor::Green),
            Level::DEBUG => ("debug", AnsiColor::Blue),
            Level::TRACE => ("trace", AnsiColor::Magenta),
        };
        let style = if w.has_ansi_escapes() {
            Style::new().bold().fg_color(Some(color.into()))
        } else {
            Style::new()
        };
        write!(w, "referee: ")?;
        if !label.is_empty() {
            write!(w, "{style}{label}{style:#}: ")?;
        }
        if level >= Level::DEBUG {
            if let Some(scope) = ctx.event_scope() {
                for span in scope.from_root() {
                    write!(w, "{}", span.name())?;
                    let ext = span.extensions();
                    if let Some(fields) = ext.get::<FormattedFields<N>>() {
                        if !fields.is_empty() {
                            write!(w, "{{{fields}}}")?;
                        }
                    }
                    write!(w, ": ")?;
                }
            }
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Runs `f` with every event at debug level and above written to a buffer of this thread's
/// own, and returns what `f` returned with what was written (for tests of what is said).
#[cfg(test)]
pub(crate) fn captured<T>(f: impl FnOnce() -> T) -> (T, String) {
    use std::sync::{Arc, Mutex};
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Capture {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Capture::default();
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = log
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    (out, String::from_utf8_lossy(&text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_wins_and_each_v_says_more() {
        assert_eq!(Verbosity::from_flags(true, 2), Verbosity::Quiet);
        assert_eq!(Verbosity::from_flags(false, 0), Verbosity::Normal);
        assert_eq!(Verbosity::from_flags(false, 1), Verbosity::Verbose);
        assert_eq!(Verbosity::from_flags(false, 5), Verbosity::Trace);
        assert_eq!(Verbosity::Quiet.directive(), "warn");
        assert_eq!(Verbosity::Verbose.directive(), "debug");
    }
}
