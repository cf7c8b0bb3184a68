"""Running an environment's programs in containers: the program container and the desktop
image it starts from."""
