use std::process::ExitCode;

fn main() -> ExitCode {
    match referee::cli::run(std::env::args_os()) {
        Ok(code) => code.into(),
        Err(err) => {
            referee::logging::fatal(&err);
            referee::exit::ExitCode::Error.into()
        }
    }
}
