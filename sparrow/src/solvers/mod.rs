//! Algorithms written against ops: compressed-sensing recovery, and the first stage of
//! SEACells metacells (the kernel).

pub mod completion;
pub mod cs;
pub mod seacells;
