mod builder;
mod cases;
mod cli;
mod replay;
mod unreadable;
mod watch;
