"""Text handling shared by serving and training: tokens, the entity finder, anonymisation,
and the plain-question grammar."""
