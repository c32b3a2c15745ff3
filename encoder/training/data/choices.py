"""What `cheapqa data build` can be asked for, and its defaults: kept apart from the builder
(which loads the entity finder and the cloze code) so that the command line can offer them
without loading it on every `cheapqa` command."""

TASKS = ("find", "para", "infer", "lead")
# The question: a blank's whole sentence, only its clause, or (only where a person would
# restate it) the sentence restated (encoder.training.data.cloze)
QUESTION_FORMS = ("sentence", "clause", "restated")
DOMAINS = ("books", "wiki")  # what a build's train/validation/test splits are made of
MIN_NAME_COUNT = 3  # a name must recur in its book to be an entity: fewer one-off capitals
