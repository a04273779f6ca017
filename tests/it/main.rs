mod builder;
mod cases;
mod cli;
