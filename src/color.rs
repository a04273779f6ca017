//! Whether the referee colours what it writes to a terminal: `--color auto|always|never`,
//! with `auto` deciding as clap's own help and errors do (`NO_COLOR` set and not empty: never;
//! `CLICOLOR_FORCE`: always; `CLICOLOR=0`: never; else only on a terminal that is not
//! `TERM=dumb`). An explicit `--color always|never` wins over the environment.

/// The `--color` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// Colour on a terminal, unless the environment says otherwise.
    #[default]
    Auto,
    /// Always colour, even into a pipe or file, and whatever `NO_COLOR` says.
    Always,
    /// Never colour.
    Never,
}

/// What the environment says about colour, read once (see [`Env::current`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Env {
    /// `NO_COLOR` is set and not empty.
    pub no_color: bool,
    /// `CLICOLOR_FORCE` is set, not empty and not `0`.
    pub force: bool,
    /// `CLICOLOR` is set to `0`.
    pub clicolor_off: bool,
    /// `TERM` is not `dumb`.
    pub term_colors: bool,
}

impl Env {
    /// The process's environment.
    pub fn current() -> Env {
        Env {
            no_color: anstyle_query::no_color(),
            force: anstyle_query::clicolor_force(),
            clicolor_off: anstyle_query::clicolor() == Some(false),
            term_colors: anstyle_query::term_supports_color(),
        }
    }
}

/// Whether to colour a stream that `is_terminal` (or not), under `choice` and `env`.
pub fn enabled(choice: Choice, env: Env, is_terminal: bool) -> bool {
    match choice {
        Choice::Always => true,
        Choice::Never => false,
        Choice::Auto if env.no_color => false,
        Choice::Auto if env.force => true,
        Choice::Auto if env.clicolor_off => false,
        Choice::Auto => is_terminal && env.term_colors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_choices_win_over_the_environment() {
        let no_color = Env {
            no_color: true,
            ..Env::default()
        };
        assert!(enabled(Choice::Always, no_color, false));
        let forced = Env {
            force: true,
            term_colors: true,
            ..Env::default()
        };
        assert!(!enabled(Choice::Never, forced, true));
    }

    #[test]
    fn auto_follows_no_color_then_clicolor_force_then_the_terminal() {
        let tty = Env {
            term_colors: true,
            ..Env::default()
        };
        assert!(enabled(Choice::Auto, tty, true));
        assert!(!enabled(Choice::Auto, tty, false), "a pipe");
        let dumb = Env::default();
        assert!(!enabled(Choice::Auto, dumb, true), "TERM=dumb");
        let no_color = Env {
            no_color: true,
            force: true,
            ..tty
        };
        assert!(!enabled(Choice::Auto, no_color, true), "NO_COLOR beats all");
        let forced = Env {
            force: true,
            ..dumb
        };
        assert!(
            enabled(Choice::Auto, forced, false),
            "CLICOLOR_FORCE into a pipe"
        );
        let off = Env {
            clicolor_off: true,
            ..tty
        };
        assert!(!enabled(Choice::Auto, off, true), "CLICOLOR=0");
    }
}
