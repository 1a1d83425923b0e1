# REDLOCK_SANITIZE=address;undefined  or  REDLOCK_SANITIZE=thread
if(REDLOCK_SANITIZE)
  list(JOIN REDLOCK_SANITIZE "," _redlock_sanitizers)
  add_compile_options(-fsanitize=${_redlock_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_redlock_sanitizers})
endif()
